//! What fits a tool into scheduled jobs and shells (issue 18): completion scripts and a man
//! page generated from the CLI definition, and exports written to standard output for
//! piping, with everything else on standard error.

use crate::import::listpipe;
use crate::support::TestServer;

fn stdout_of(args: &[&str]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let out = listpipe(dir.path(), args);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn bash_completions_know_the_subcommands_and_their_flags() {
    let script = stdout_of(&["completions", "bash"]);
    assert!(script.contains("_listpipe()"), "{script}");
    assert!(script.contains(" run "), "{script}");
    assert!(script.contains("--dry-run"), "{script}");
    for shell in ["zsh", "fish", "powershell", "elvish"] {
        assert!(stdout_of(&["completions", shell]).contains("listpipe"));
    }
}

#[test]
fn the_man_page_is_roff_naming_listpipe_and_its_commands() {
    let page = stdout_of(&["man"]);
    // clap_mangen's two-line prelude (the apostrophe for groff), then the title line.
    let title = page
        .lines()
        .find(|l| !l.starts_with(".ie") && !l.starts_with(".el"));
    let expected = format!(
        ".TH listpipe 1  \"listpipe {}\" ",
        env!("CARGO_PKG_VERSION")
    );
    assert_eq!(title, Some(expected.as_str()), "{page}");
    assert!(page.contains("listpipe\\-run"), "{page}");
}

#[tokio::test]
async fn an_export_to_standard_output_prints_exactly_the_csv_and_nothing_else() {
    let t = TestServer::start().await;
    let dir = t.dir.path().to_path_buf();
    std::fs::write(
        dir.join("in.csv"),
        "email,city\nanna@example.com,Berlin\nbernd@example.com,\"Bonn, Rhein\"\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("p.toml"),
        "[[import]]\nsource = \"in.csv\"\ngroup = \"News\"\ncreate_group = true\n\
         [import.receiver]\nemail = \"email\"\n[import.global_attributes]\ncity = \"city\"\n\
         [[export]]\nname = \"to pipe\"\ngroup = \"News\"\nout = \"-\"\ncolumns = [\"email\", \"city\"]\n\
         [[export]]\nname = \"to file\"\ngroup = \"News\"\nout = \"news.csv\"\ncolumns = [\"email\", \"city\"]\n",
    )
    .unwrap();
    let args: Vec<String> = vec![
        "run".into(),
        "p.toml".into(),
        "--target-url".into(),
        t.base_url(),
        "--token".into(),
        t.client.token(),
    ];
    let run_dir = dir.clone();
    let out = tokio::task::spawn_blocking(move || {
        listpipe(
            &run_dir,
            &args.iter().map(String::as_str).collect::<Vec<_>>(),
        )
    })
    .await
    .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(
        stdout,
        "email,city\nanna@example.com,Berlin\nbernd@example.com,\"Bonn, Rhein\"\n"
    );
    assert_eq!(
        stdout,
        std::fs::read_to_string(dir.join("news.csv")).unwrap()
    );
    assert!(
        stderr.contains("to pipe: export: 2 rows written to standard output (csv,"),
        "{stderr}"
    );
    assert!(!dir.join("-").exists());
}

#[test]
fn standard_output_takes_csv_and_json_lines_only() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("p.toml");
    std::fs::write(
        &file,
        "[[export]]\ngroup = \"News\"\nout = \"-\"\nformat = \"xlsx\"\n\n[[export]]\ngroup = \"News\"\nout = \"-\"\nformat = \"jsonl\"\n",
    )
    .unwrap();
    let err = listpipe::pipeline::load(&file).unwrap_err().to_string();
    assert_eq!(
        err,
        format!(
            "{}:3:7: `out = \"-\"` writes to standard output, which takes csv or jsonl; xlsx is not a stream (it needs a file): give `out` a file name",
            file.display()
        )
    );
}
