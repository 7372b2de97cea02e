//! Names of works and paths, derived from their `what` so that clients never invent ids: the
//! seed's pattern `^[a-z][a-z0-9-]*$` (`Build API` is `build-api`).

/// The name `what` derives: ASCII letters and digits lowercased, every run of other characters
/// one hyphen, none at either end; apostrophes vanish (`Don't` is `dont`). Refused, with the
/// reason, when nothing is left or the name would not start with a letter.
pub fn derive(what: &str) -> Result<String, String> {
    let mut name = String::with_capacity(what.len());
    let mut gap = false;
    for c in what.chars() {
        if c.is_ascii_alphanumeric() {
            if gap && !name.is_empty() {
                name.push('-');
            }
            gap = false;
            name.push(c.to_ascii_lowercase());
        } else if !matches!(c, '\'' | '\u{2019}') {
            gap = true;
        }
    }
    match name.chars().next() {
        None => Err(format!(
            "{what:?} has no ASCII letters or digits to derive a name from"
        )),
        Some(c) if !c.is_ascii_lowercase() => Err(format!(
            "{what:?} gives the name {name:?}, which does not start with a letter as names must (^[a-z][a-z0-9-]*$)"
        )),
        Some(_) => Ok(name),
    }
}

#[cfg(test)]
mod tests {
    use super::derive;

    #[test]
    fn names_follow_the_seed_pattern() {
        assert_eq!(derive("Build API").unwrap(), "build-api");
        assert_eq!(derive("Setup database").unwrap(), "setup-database");
        assert_eq!(derive("  Set up: env (v2)!  ").unwrap(), "set-up-env-v2");
        assert_eq!(derive("Don't panic").unwrap(), "dont-panic");
        assert_eq!(derive("Café crème").unwrap(), "caf-cr-me");
        let pattern = regex::Regex::new("^[a-z][a-z0-9-]*$").unwrap();
        for what in ["Build API", "a--b", "X1 y2", "Z"] {
            assert!(pattern.is_match(&derive(what).unwrap()), "{what}");
        }
    }

    #[test]
    fn names_that_cannot_start_with_a_letter_are_refused() {
        assert!(derive("42 things").unwrap_err().contains("\"42-things\""));
        assert!(derive("!!!").unwrap_err().contains("no ASCII letters"));
        assert!(derive("日本").is_err());
    }
}
