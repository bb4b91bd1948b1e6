//! The ZooKeeper config: connect strings normalised or refused, namespaces, credentials, TLS.

use super::*;

#[test]
fn connect_strings_with_several_hosts_are_normalised() {
    let c = ZkConfig::new("a:1, b ,[::1]:2182", "ns").unwrap();
    assert_eq!(c.hosts(), ["a:1", "b:2181", "[::1]:2182"]);
    assert_eq!(c.connect_string(), "a:1,b:2181,[::1]:2182");
}

#[test]
fn bad_connect_strings_name_the_offending_host() {
    assert_eq!(
        ZkConfig::new(" ", "ns").unwrap_err(),
        ZkConfigError::EmptyConnectString
    );
    for (connect, host) in [
        ("a:1,,b:2", ""),
        ("a:x", "a:x"),
        ("a:0", "a:0"),
        (":1", ":1"),
    ] {
        match ZkConfig::new(connect, "ns").unwrap_err() {
            ZkConfigError::BadHost { host: h, .. } => assert_eq!(h, host, "{connect}"),
            other => panic!("{connect}: expected BadHost, got {other:?}"),
        }
    }
    assert!(matches!(
        ZkConfig::new("a:1/x", "ns").unwrap_err(),
        ZkConfigError::ChrootInConnectString { .. }
    ));
}

#[test]
fn namespaces_must_be_relative_paths() {
    for bad in ["", "/ns", "ns/", "a//b", "a/../b", "zookeeper", "a b"] {
        assert!(
            matches!(
                ZkConfig::new("h:1", bad),
                Err(ZkConfigError::BadNamespace { .. })
            ),
            "{bad:?} should be refused"
        );
    }
    assert_eq!(ZkConfig::new("h:1", "a/b").unwrap().namespace(), "a/b");
}

#[test]
fn digest_credentials_need_a_user_and_stay_out_of_debug_output() {
    assert_eq!(
        ZkConfig::new("h:1", "ns").unwrap().with_digest(":pw"),
        Err(ZkConfigError::BadDigest)
    );
    let c = ZkConfig::new("h:1", "ns")
        .unwrap()
        .with_digest("ops:s3cret")
        .unwrap();
    assert_eq!(c.digest_user(), Some("ops"));
    assert!(!format!("{c:?}").contains("s3cret"));
}
