//! The people of an account: who may log in on the authorization page and
//! approve an application (spec §5.5).
//!
//! Passwords are kept only as Argon2id PHC strings (salted, memory-hard).
//! Hashing is slow on purpose, so it happens outside the store's lock:
//! [`hash_password`] before a write, [`verify`] on the hash that
//! [`login_hash`] read.

use super::db::{Db, Row, params};
use super::{AccountId, StoreError, StoreResult, now};
use argon2::password_hash::{PasswordHasher, PasswordVerifier, SaltString};
use argon2::{Argon2, PasswordHash as Phc};
use std::sync::OnceLock;

/// The shortest password `accounts user` accepts.
pub const MIN_PASSWORD_CHARS: usize = 8;
/// The role of every user made so far (the API names roles; one is enough here).
pub const ROLE_ADMIN: &str = "admin";

/// A user as the rest of the server sees it (never with the password).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct User {
    pub id: i64,
    pub email: String,
    pub name: String,
    pub role: String,
}

/// A password after hashing: the only form the store accepts.
#[derive(Debug, Clone)]
pub struct PasswordHash(String);

/// Hashes a password with Argon2id and a fresh random salt.
pub fn hash_password(password: &str) -> StoreResult<PasswordHash> {
    if password.chars().count() < MIN_PASSWORD_CHARS {
        return super::invalid(format!(
            "a password needs at least {MIN_PASSWORD_CHARS} characters"
        ));
    }
    let mut salt = [0u8; argon2::RECOMMENDED_SALT_LEN];
    getrandom::fill(&mut salt).map_err(|e| StoreError::Internal(format!("no randomness: {e}")))?;
    let salt =
        SaltString::encode_b64(&salt).map_err(|e| StoreError::Internal(format!("salt: {e}")))?;
    Argon2::default()
        .hash_password(password.as_bytes(), &salt)
        .map(|h| PasswordHash(h.to_string()))
        .map_err(|e| StoreError::Internal(format!("password hashing: {e}")))
}

/// Checks a password against a stored hash. `None` (no such user) still
/// spends the time of one check, so the answer time does not tell whether
/// an address has an account.
pub fn verify(stored: Option<&str>, password: &str) -> bool {
    static DUMMY: OnceLock<String> = OnceLock::new();
    let dummy = DUMMY.get_or_init(|| {
        hash_password("not a password of anyone")
            .map(|h| h.0)
            .unwrap_or_default()
    });
    let (phc, real) = match stored {
        Some(s) => (s, true),
        None => (dummy.as_str(), false),
    };
    let ok = Phc::new(phc).is_ok_and(|h| {
        Argon2::default()
            .verify_password(password.as_bytes(), &h)
            .is_ok()
    });
    ok && real
}

fn check_email(email: &str) -> StoreResult<&str> {
    let email = email.trim();
    let valid = email.split_once('@').is_some_and(|(local, domain)| {
        !local.is_empty() && (domain.contains('.') || domain == "localhost")
    }) && !email.chars().any(|c| c.is_whitespace() || c.is_control());
    if valid {
        Ok(email)
    } else {
        super::invalid(format!(
            "\"{email}\" is not an email address (a user logs in with one, like admin@example.com)"
        ))
    }
}

/// Adds a user to the account, or gives an existing one (same email) a new
/// password and, when given, a new name. Returns the user and whether it is new.
pub fn upsert(
    db: &Db,
    account: AccountId,
    email: &str,
    name: Option<&str>,
    password: &PasswordHash,
) -> StoreResult<(User, bool)> {
    let email = check_email(email)?;
    let t = now();
    let update = || {
        db.exec(
            "UPDATE users SET password_hash = ?1, name = COALESCE(?2, name), changed = ?3
             WHERE account_id = ?4 AND email = ?5",
            params![password.0, name, t, account.0, email],
        )
    };
    let updated = update()?;
    let mut new = updated == 0;
    if new {
        // On PostgreSQL another server process may add the same address
        // between the update and the insert: its row is then updated.
        new = db.exec(
            "INSERT INTO users (account_id, email, name, role, password_hash, created, changed)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6) ON CONFLICT (account_id, email) DO NOTHING",
            params![
                account.0,
                email,
                name.unwrap_or(""),
                ROLE_ADMIN,
                password.0,
                t
            ],
        )? > 0;
        if !new {
            update()?;
        }
    }
    let user = find(db, account, email)?
        .ok_or_else(|| StoreError::Internal("the user just written is missing".into()))?;
    Ok((user, new))
}

fn find(db: &Db, account: AccountId, email: &str) -> StoreResult<Option<User>> {
    db.opt_row(
        "SELECT id, email, name, role FROM users WHERE account_id = ?1 AND email = ?2",
        params![account.0, email.trim()],
        from_row,
    )
}

fn from_row(r: &Row) -> StoreResult<User> {
    Ok(User {
        id: r.get(0)?,
        email: r.get(1)?,
        name: r.get(2)?,
        role: r.get(3)?,
    })
}

/// The login a server's first start makes for the default account.
pub const FIRST_USER_EMAIL: &str = "admin@listpipe.invalid";

/// Makes the account's first user, [`FIRST_USER_EMAIL`], with a random
/// password; answers the email and the password (its only plain copy).
pub fn create_first(db: &Db, account: AccountId) -> StoreResult<(String, String)> {
    let mut buf = [0u8; 12];
    getrandom::fill(&mut buf).map_err(|e| StoreError::Internal(format!("no randomness: {e}")))?;
    let password = hex::encode(buf);
    upsert(
        db,
        account,
        FIRST_USER_EMAIL,
        Some("Administrator"),
        &hash_password(&password)?,
    )?;
    Ok((FIRST_USER_EMAIL.to_string(), password))
}

/// The account's users, oldest first.
pub fn list(db: &Db, account: AccountId) -> StoreResult<Vec<User>> {
    db.rows(
        "SELECT id, email, name, role FROM users WHERE account_id = ?1 ORDER BY id",
        params![account.0],
        from_row,
    )
}

/// The user and stored hash for a login attempt (check it with [`verify`]).
pub fn login_hash(db: &Db, account: AccountId, email: &str) -> StoreResult<Option<(User, String)>> {
    db.opt_row(
        "SELECT id, email, name, role, password_hash FROM users
         WHERE account_id = ?1 AND email = ?2",
        params![account.0, email.trim()],
        |r| Ok((from_row(r)?, r.get::<String>(4)?)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hash_verifies_its_password_only_and_is_salted() {
        let a = hash_password("correct horse").unwrap();
        let b = hash_password("correct horse").unwrap();
        assert!(a.0.starts_with("$argon2id$"), "{}", a.0);
        assert_ne!(a.0, b.0, "each hash has its own salt");
        assert!(verify(Some(&a.0), "correct horse"));
        assert!(!verify(Some(&a.0), "correct horsE"));
        assert!(!verify(None, "correct horse"));
        assert!(!verify(Some("not a phc string"), "correct horse"));
    }

    #[test]
    fn short_passwords_and_odd_addresses_are_refused() {
        assert_eq!(
            hash_password("short").unwrap_err().to_string(),
            "a password needs at least 8 characters"
        );
        assert!(check_email("admin@listpipe.invalid").is_ok());
        assert!(check_email("admin").is_err());
        assert!(check_email("ad min@x.de").is_err());
    }
}
