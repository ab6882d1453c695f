//! Settings from the environment, read by one rule everywhere: a variable
//! that is unset, empty or only blanks means "not set", and its default
//! applies. (`XDAL_BACKEND=` in a shell script that clears a variable then
//! behaves as `unset XDAL_BACKEND` does, for every variable alike.)
use std::ffi::OsStr;

/// The value of `name`, trimmed; None when it is unset, empty or blank. A
/// value that is not Unicode is returned lossily converted, so that its
/// reader refuses it with a message rather than taking the default.
pub fn var(name: impl AsRef<OsStr>) -> Option<String> {
    let value = std::env::var_os(name)?;
    let text = value.to_string_lossy();
    let trimmed = text.trim();
    (!trimmed.is_empty()).then(|| trimmed.to_string())
}

#[cfg(test)]
mod tests {
    use super::var;

    #[test]
    fn unset_empty_and_blank_values_are_all_not_set() {
        // Names no other test of this crate touches.
        std::env::remove_var("XDAL_SUPPORT_ENV_TEST_UNSET");
        assert_eq!(var("XDAL_SUPPORT_ENV_TEST_UNSET"), None);
        std::env::set_var("XDAL_SUPPORT_ENV_TEST_EMPTY", "");
        assert_eq!(var("XDAL_SUPPORT_ENV_TEST_EMPTY"), None);
        std::env::set_var("XDAL_SUPPORT_ENV_TEST_BLANK", "  \t");
        assert_eq!(var("XDAL_SUPPORT_ENV_TEST_BLANK"), None);
        std::env::set_var("XDAL_SUPPORT_ENV_TEST_VALUE", " 12M ");
        assert_eq!(var("XDAL_SUPPORT_ENV_TEST_VALUE").as_deref(), Some("12M"));
    }
}
