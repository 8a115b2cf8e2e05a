//! The `Credential` argument of `MSFT_SmbGlobalMapping.Create`, as both the
//! simulated host and the HostProcess backend build it.

/// The user name and the password joined by `:`, with the user name's
/// backslashes doubled and its colons escaped by a backslash, so that
/// `DOMAIN\user` and a name holding `:` reach the SMB client intact. The
/// password is taken as it is (everything after the first unescaped colon).
pub fn join(user: &str, password: &str) -> String {
    let mut out = String::with_capacity(user.len() + password.len() + 4);
    for c in user.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            ':' => out.push_str("\\:"),
            c => out.push(c),
        }
    }
    out.push(':');
    out.push_str(password);
    out
}

#[cfg(test)]
mod tests {
    use super::join;

    #[test]
    fn only_the_user_name_is_escaped() {
        assert_eq!(join(r"DOMAIN\user", "pa:ss"), r"DOMAIN\\user:pa:ss");
        assert_eq!(join("odd:name", "x"), r"odd\:name:x");
        assert_eq!(join("user", ""), "user:");
    }
}
