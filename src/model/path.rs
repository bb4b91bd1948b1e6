//! Registry paths: absolute within a namespace (`/orders/config`), joined, split and checked
//! without a registry.

use super::error::{RegistryError, Result};

/// `parent` + `/` + `name`, without doubling the slash under the root.
pub fn join_path(parent: &str, name: &str) -> String {
    if parent == "/" {
        format!("/{name}")
    } else {
        format!("{parent}/{name}")
    }
}

/// The parent of an absolute path (`/` for a top-level node and for `/` itself).
pub fn parent_path(path: &str) -> &str {
    match path.rfind('/') {
        Some(0) | None => "/",
        Some(i) => &path[..i],
    }
}

/// Checks that `path` is absolute, has no empty, `.` or `..` segment and no trailing slash.
pub fn validate_path(path: &str) -> Result<()> {
    let bad = |reason: &str| {
        Err(RegistryError::InvalidPath {
            path: path.to_owned(),
            reason: reason.to_owned(),
        })
    };
    if path == "/" {
        return Ok(());
    }
    if !path.starts_with('/') {
        return bad("must start with '/'");
    }
    if path.ends_with('/') {
        return bad("must not end with '/'");
    }
    for seg in path[1..].split('/') {
        if seg.is_empty() {
            return bad("empty segment");
        }
        if seg == "." || seg == ".." {
            return bad("relative segment");
        }
        if seg.contains('\0') {
            return bad("NUL character");
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_helpers_handle_the_root() {
        assert_eq!(join_path("/", "a"), "/a");
        assert_eq!(join_path("/a", "b"), "/a/b");
        assert_eq!(parent_path("/a"), "/");
        assert_eq!(parent_path("/a/b/c"), "/a/b");
        assert_eq!(parent_path("/"), "/");
    }

    #[test]
    fn invalid_paths_are_refused_with_a_reason() {
        for bad in ["", "a", "/a/", "//a", "/a//b", "/a/./b", "/a/.."] {
            assert!(validate_path(bad).is_err(), "{bad:?} should be refused");
        }
        for good in ["/", "/a", "/a/b-c/d_e.f"] {
            assert!(validate_path(good).is_ok(), "{good:?} should be accepted");
        }
    }
}
