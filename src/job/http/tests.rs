//! The HTTP job as its props configure it: the request read from them, and bad values refused
//! naming the key.

use super::*;

fn props(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

#[test]
fn data_is_the_query_string_of_a_method_without_a_body() {
    let job = HttpJob::from_props(&props(&[
        (URI_PROP, "http://h/path?a=1"),
        (METHOD_PROP, "get"),
        (DATA_PROP, "b=2"),
    ]))
    .unwrap();
    assert_eq!(job.url().as_str(), "http://h/path?a=1&b=2");
    assert_eq!(job.body(), None);
}

#[test]
fn a_password_in_the_uri_is_masked_in_failures() {
    let job = HttpJob::from_props(&props(&[
        (URI_PROP, "https://u:secret@h/x"),
        (METHOD_PROP, "DELETE"),
    ]))
    .unwrap();
    assert_eq!(job.shown, "https://u:***@h/x");
    let job = HttpJob::from_props(&props(&[
        (URI_PROP, "https://h/x?access_token=t0k3n"),
        (METHOD_PROP, "GET"),
    ]))
    .unwrap();
    assert_eq!(job.shown, "https://h/x?access_token=***");
    assert!(!format!("{job:?}").contains("t0k3n"), "{job:?}");
}

#[test]
fn a_redirect_policy_other_than_the_three_is_refused_naming_the_key() {
    let err = HttpJob::from_props(&props(&[
        (URI_PROP, "https://h/x"),
        (METHOD_PROP, "GET"),
        (REDIRECT_PROP, "anywhere"),
    ]))
    .unwrap_err();
    assert!(err.to_string().contains(REDIRECT_PROP), "{err}");
}
