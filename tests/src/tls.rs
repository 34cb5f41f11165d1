//! Test certificates made with the `openssl` CLI: a CA of the test's own and server
//! certificates it signs, for the names a test asks for.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// A CA in `dir`: `ca.pem` (its certificate) and its key.
pub struct TestCa {
    dir: PathBuf,
}

/// A server certificate and its key, as files.
pub struct ServerCert {
    pub cert: PathBuf,
    pub key: PathBuf,
}

fn openssl(dir: &Path, args: &[&str]) {
    #[allow(clippy::disallowed_methods)] // Test setup drives the real CLI directly.
    let out = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .expect("run openssl");
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `openssl req` making a new P-256 key, with `args`.
fn new_key(dir: &Path, args: &[&str]) {
    let mut all = vec![
        "req",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:P-256",
        "-nodes",
    ];
    all.extend_from_slice(args);
    openssl(dir, &all);
}

impl TestCa {
    /// A new CA (named `name`) in `dir`.
    pub fn new(dir: &Path, name: &str) -> Self {
        let subject = format!("/CN={name}");
        let (key, pem) = (format!("{name}.key"), format!("{name}.pem"));
        new_key(
            dir,
            &[
                "-x509",
                "-keyout",
                &key,
                "-out",
                &pem,
                "-days",
                "30",
                "-subj",
                &subject,
                "-addext",
                "basicConstraints=critical,CA:TRUE",
                "-addext",
                "keyUsage=critical,keyCertSign,cRLSign",
            ],
        );
        let ca = Self {
            dir: dir.join(name),
        };
        std::fs::create_dir_all(&ca.dir).expect("mkdir");
        std::fs::rename(dir.join(format!("{name}.key")), ca.dir.join("ca.key")).expect("mv");
        std::fs::rename(dir.join(format!("{name}.pem")), ca.dir.join("ca.pem")).expect("mv");
        ca
    }

    /// The CA's certificate (what a client trusts).
    pub fn cert(&self) -> PathBuf {
        self.dir.join("ca.pem")
    }

    /// A server certificate named `file` for the names in `san` (`IP:127.0.0.1,DNS:localhost`),
    /// valid for `days` from now (0: it expires as it is made).
    pub fn issue(&self, file: &str, san: &str, days: u32) -> ServerCert {
        let dir = &self.dir;
        let key = format!("{file}.key");
        let csr = format!("{file}.csr");
        let pem = format!("{file}.pem");
        let subject = format!("/CN={file}");
        new_key(dir, &["-keyout", &key, "-out", &csr, "-subj", &subject]);
        std::fs::write(
            dir.join(format!("{file}.ext")),
            format!("subjectAltName={san}\nextendedKeyUsage=serverAuth\n"),
        )
        .expect("write ext");
        let ext = format!("{file}.ext");
        let mut args = vec![
            "x509",
            "-req",
            "-in",
            &csr,
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            &pem,
            "-extfile",
            &ext,
        ];
        let days_text = days.to_string();
        args.extend_from_slice(&["-days", &days_text]);
        openssl(dir, &args);
        ServerCert {
            cert: dir.join(pem),
            key: dir.join(key),
        }
    }
}
