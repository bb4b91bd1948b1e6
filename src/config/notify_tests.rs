use super::*;

fn props(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn fields(handler: &str, pairs: &[(&str, &str)]) -> Vec<&'static str> {
    match NotifierSettings::from_props(handler, &props(pairs)) {
        Some(Err(errors)) => errors.iter().map(|e| e.field).collect(),
        Some(Ok(_)) => vec![],
        None => vec!["(not a notifier)"],
    }
}

const EMAIL_OK: &[(&str, &str)] = &[
    ("email.host", "smtp.example.com"),
    ("email.port", "465"),
    ("email.username", "ops"),
    ("email.password", "secret"),
    ("email.from", "ops@example.com"),
    ("email.to", "a@example.com, b@example.com"),
];

#[test]
fn email_props_are_read_with_elasticjobs_keys_and_defaults() {
    let Some(Ok(NotifierSettings::Email(s))) =
        NotifierSettings::from_props(EMAIL, &props(EMAIL_OK))
    else {
        panic!("valid email props")
    };
    assert_eq!((s.host.as_str(), s.port), ("smtp.example.com", 465));
    assert!(s.use_ssl && !s.debug);
    assert_eq!(s.subject, DEFAULT_SUBJECT);
    assert_eq!(s.to.len(), 2);
    assert!(s.cc.is_empty() && s.bcc.is_empty());
}

#[test]
fn each_bad_notifier_prop_is_named() {
    let with = |extra: &[(&'static str, &'static str)]| {
        let mut all: Vec<(&str, &str)> = EMAIL_OK.to_vec();
        all.retain(|(k, _)| !extra.iter().any(|(e, _)| e == k));
        all.extend(extra.iter().filter(|(_, v)| !v.is_empty()));
        all
    };
    // (handler, props, the fields refused)
    type Row = (
        &'static str,
        Vec<(&'static str, &'static str)>,
        &'static [&'static str],
    );
    let table: &[Row] = &[
        (EMAIL, with(&[]), &[]),
        (EMAIL, with(&[("email.port", "0")]), &["props.email.port"]),
        (
            EMAIL,
            with(&[("email.port", "smtp")]),
            &["props.email.port"],
        ),
        (EMAIL, with(&[("email.host", "")]), &["props.email.host"]),
        (
            EMAIL,
            with(&[("email.to", "not an address")]),
            &["props.email.to"],
        ),
        (
            EMAIL,
            with(&[("email.cc", "x@y.z, @@")]),
            &["props.email.cc"],
        ),
        (
            EMAIL,
            with(&[("email.useSsl", "yes")]),
            &["props.email.useSsl"],
        ),
        (EMAIL, with(&[("email.debug", "1")]), &["props.email.debug"]),
        (
            EMAIL,
            vec![],
            &[
                "props.email.host",
                "props.email.port",
                "props.email.username",
                "props.email.password",
                "props.email.from",
                "props.email.to",
            ],
        ),
        (
            WECHAT,
            vec![(
                "wechat.webhook",
                "https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=k",
            )],
            &[],
        ),
        (WECHAT, vec![], &["props.wechat.webhook"]),
        (
            WECHAT,
            vec![
                ("wechat.webhook", "ftp://x"),
                ("wechat.readTimeoutMilliseconds", "-1"),
            ],
            &[
                "props.wechat.webhook",
                "props.wechat.readTimeoutMilliseconds",
            ],
        ),
        (
            DINGTALK,
            vec![
                (
                    "dingtalk.webhook",
                    "https://oapi.dingtalk.com/robot/send?access_token=t",
                ),
                ("dingtalk.secret", "s"),
            ],
            &[],
        ),
        (
            DINGTALK,
            vec![
                ("dingtalk.webhook", "not a url"),
                ("dingtalk.connectTimeoutMilliseconds", "0"),
            ],
            &[
                "props.dingtalk.webhook",
                "props.dingtalk.connectTimeoutMilliseconds",
            ],
        ),
        (
            WEBHOOK,
            vec![("webhook.url", "http://127.0.0.1:9/hook")],
            &[],
        ),
        (
            WEBHOOK,
            vec![("wechat.webhook", "http://127.0.0.1:9/hook")],
            &["props.webhook.url"],
        ),
        ("LOG", vec![], &["(not a notifier)"]),
    ];
    for (handler, pairs, expected) in table {
        assert_eq!(fields(handler, pairs), *expected, "{handler} {pairs:?}");
    }
}
