//! The three job types (simple, dataflow, script) run through `ItemHandler::run_item`, as the
//! engine runs them, with a hand-built `ShardingContext`.
//!
//! Script tests run real `#!/bin/sh` scripts. All scripts are written once, before any test of
//! this binary starts a process: a script written while another thread forks can inherit a
//! writable descriptor in the child and fail to exec with "text file busy".

use support::cluster::item_context;

use std::collections::BTreeMap;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use async_trait::async_trait;
use serde_json::Value;
use shardcron::job::dataflow::{Dataflow, DataflowJob, STREAMING_PROP};
use shardcron::job::script::ScriptJob;
use shardcron::job::{ItemHandler, JobError, ShardingContext, SharedHandler, Simple, SimpleJob};
use shardcron::{InstanceId, ShardItem};

/// Item 1 of 3 of job `orders`, parameters set so that each JSON field is visible.
fn context() -> ShardingContext {
    ShardingContext {
        task_id: "orders@-@1@-@NORMAL@-@192.0.2.1@-@42@-@7".into(),
        job_parameter: "region=eu".into(),
        sharding_parameter: "Shanghai".into(),
        instance_id: InstanceId::parse("192.0.2.1@-@42").unwrap(),
        ..item_context("orders", 1, 3)
    }
}

const SCRIPTS: &[(&str, &str)] = &[
    // Writes each argument after the first on its own line into the file named by the first.
    (
        "record_args.sh",
        "out=\"$1\"; shift\nprintf '%s\\n' \"$@\" > \"$out\"\n",
    ),
    ("exit3.sh", "echo 'about to fail' >&2\nexit 3\n"),
    ("self_kill.sh", "kill -KILL $$\n"),
    // Tells the test it runs (through the FIFO named by $1), then hangs as the same process.
    ("hang.sh", "echo $$ > \"$1\"\nexec sleep 60\n"),
    (
        "chatty.sh",
        "i=0\nwhile [ $i -lt 4000 ]; do\n  echo \"out $i: padding padding padding padding\"\n  \
         echo \"err $i: padding padding padding padding\" >&2\n  i=$((i+1))\ndone\n",
    ),
];

/// A `tracing` writer that keeps what it is given.
#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Vec<u8>>>);

impl Write for Capture {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Everything this test binary logs, captured by a global subscriber.
///
/// Global, and installed before any script runs: a subscriber scoped to one test misses events
/// when another thread registers the same callsite concurrently (tracing caches interest).
fn logs() -> &'static Capture {
    static LOGS: OnceLock<Capture> = OnceLock::new();
    LOGS.get_or_init(|| {
        let capture = Capture::default();
        let writer = capture.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_ansi(false)
            .with_writer(move || writer.clone())
            .finish();
        tracing::subscriber::set_global_default(subscriber).unwrap();
        capture
    })
}

/// The directory holding every script, written on first use.
fn scripts() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        logs();
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("job_types_scripts");
        std::fs::create_dir_all(&dir).unwrap();
        for (name, body) in SCRIPTS {
            // Written aside and renamed into place, so that another run of this binary that is
            // executing the previous copy is never disturbed.
            let staged = dir.join(format!("{name}.{}", std::process::id()));
            std::fs::write(&staged, format!("#!/bin/sh\n{body}")).unwrap();
            std::fs::set_permissions(&staged, std::fs::Permissions::from_mode(0o755)).unwrap();
            std::fs::rename(&staged, dir.join(name)).unwrap();
        }
        dir
    })
}

/// The quoted path of one script, ready to go into a command line.
fn script(name: &str) -> String {
    shell_words::quote(scripts().join(name).to_str().unwrap()).into_owned()
}

/// Runs `record_args.sh` with `extra` arguments and returns the arguments it received.
async fn recorded_args(extra: &str) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("args");
    let line = format!(
        "{} {} {extra}",
        script("record_args.sh"),
        shell_words::quote(out.to_str().unwrap())
    );
    ScriptJob::new(&line)
        .unwrap()
        .run_item(context())
        .await
        .unwrap();
    let text = std::fs::read_to_string(out).unwrap();
    text.lines().map(str::to_owned).collect()
}

#[tokio::test]
async fn script_job_receives_the_context_json_as_last_argument() {
    let args = recorded_args("first").await;
    assert_eq!(args.len(), 2, "{args:?}");
    let json: Value = serde_json::from_str(&args[1]).unwrap();
    assert_eq!(
        json,
        serde_json::json!({
            "jobName": "orders",
            "taskId": "orders@-@1@-@NORMAL@-@192.0.2.1@-@42@-@7",
            "shardingTotalCount": 3,
            "jobParameter": "region=eu",
            "shardingItem": 1,
            "shardingParameter": "Shanghai",
            "fencingToken": 0,
        })
    );
}

#[tokio::test]
async fn script_job_keeps_a_quoted_phrase_as_one_argument() {
    let args = recorded_args(r#"'a b' "c \"d\"" e\ f '$HOME' *"#).await;
    assert_eq!(args[..5], ["a b", "c \"d\"", "e f", "$HOME", "*"]);
}

#[tokio::test]
async fn script_job_fails_with_the_exit_status_when_the_script_exits_3() {
    let line = script("exit3.sh");
    let err = ScriptJob::new(&line)
        .unwrap()
        .run_item(context())
        .await
        .unwrap_err();
    assert_eq!(
        err,
        JobError::Exit {
            command: line,
            status: "code 3".into()
        }
    );
}

#[tokio::test]
async fn script_job_runs_the_command_line_its_runs_props_carry_so_a_config_change_applies_live() {
    // Built with a script that exits 3; the run's props (the config as changed in the registry)
    // name another line, and that one runs.
    let job = ScriptJob::new(&script("exit3.sh")).unwrap();
    let with_line = |line: &str| {
        let mut ctx = context();
        ctx.props = Arc::new(BTreeMap::from([(
            "script.command.line".to_owned(),
            line.to_owned(),
        )]));
        ctx
    };
    job.run_item(with_line("/bin/true")).await.unwrap();
    let err = job
        .run_item(with_line("/bin/sh -c 'exit 5"))
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("props.script.command.line"),
        "a broken line names its key: {err}"
    );
    // Without the key in the run's props, the line it was built with runs.
    assert!(matches!(
        job.run_item(context()).await,
        Err(JobError::Exit { .. })
    ));
}

#[tokio::test]
async fn script_job_killed_by_a_signal_fails_naming_the_signal() {
    let err = ScriptJob::new(&script("self_kill.sh"))
        .unwrap()
        .run_item(context())
        .await
        .unwrap_err();
    assert!(
        matches!(&err, JobError::Exit { status, .. } if status == "signal 9"),
        "{err:?}"
    );
}

#[tokio::test]
async fn script_job_fails_with_spawn_when_the_program_is_missing() {
    scripts(); // no process may start before the scripts are written (see the module docs)
    let err = ScriptJob::new("/nonexistent/shardcron-no-such-program --flag")
        .unwrap()
        .run_item(context())
        .await
        .unwrap_err();
    assert!(
        matches!(&err, JobError::Spawn { command, .. }
            if command == "/nonexistent/shardcron-no-such-program --flag"),
        "{err:?}"
    );
}

#[tokio::test]
async fn script_job_kills_a_hanging_script_when_the_item_is_cancelled() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("started");
    let hang = script("hang.sh");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success(), "mkfifo failed: {made}");

    tracing::info!("--- start a script that hangs, and wait until it runs");
    let job = ScriptJob::new(&format!("{hang} {}", fifo.display())).unwrap();
    let ctx = context();
    let cancel = ctx.cancellation.clone();
    let run = tokio::spawn(async move { job.run_item(ctx).await });
    // Opening the FIFO for reading blocks until the script opens it for writing.
    let read_pid = tokio::task::spawn_blocking(move || std::fs::read_to_string(fifo));
    let pid = tokio::time::timeout(Duration::from_secs(30), read_pid)
        .await
        .expect("the script never started")
        .unwrap()
        .unwrap();

    tracing::info!("--- cancel the item: the script is killed and the item fails");
    cancel.cancel();
    let result = tokio::time::timeout(Duration::from_secs(30), run)
        .await
        .expect("cancellation did not end the item")
        .unwrap();
    assert!(matches!(result, Err(JobError::Cancelled(_))), "{result:?}");
    let alive = std::process::Command::new("kill")
        .args(["-0", pid.trim()])
        .stderr(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(!alive.success(), "process {} survived", pid.trim());
}

#[tokio::test]
async fn a_chatty_script_never_blocks_and_its_lines_are_logged_with_job_and_item() {
    // 4000 lines of ~45 bytes on each pipe: far beyond a 64 KiB pipe buffer.
    let job = ScriptJob::new(&script("chatty.sh")).unwrap();
    job.run_item(context()).await.unwrap();

    let logged = String::from_utf8(logs().0.lock().unwrap().clone()).unwrap();
    let line = |needle: &str| {
        logged
            .lines()
            .find(|l| l.contains(needle))
            .unwrap_or_else(|| panic!("{needle:?} was not logged"))
            .to_owned()
    };
    for (needle, level) in [("out 3999:", "INFO"), ("err 3999:", "WARN")] {
        let l = line(needle);
        assert!(
            l.contains(level) && l.contains("job=orders") && l.contains("item=1"),
            "{l}"
        );
    }
}

/// Hands out `batches` numbered from the item, and records what it processed.
#[derive(Debug)]
struct Numbers {
    batches: u32,
    fetched: Mutex<u32>,
    processed: Mutex<Vec<Vec<u32>>>,
}

#[async_trait]
impl DataflowJob for Numbers {
    type Item = u32;
    async fn fetch(&self, ctx: &ShardingContext) -> Result<Vec<u32>, JobError> {
        let mut fetched = self.fetched.lock().unwrap();
        *fetched += 1;
        let base = ctx.sharding_item.get() * 100 + *fetched;
        Ok(if *fetched <= self.batches {
            vec![base]
        } else {
            Vec::new()
        })
    }
    async fn process(&self, _ctx: &ShardingContext, data: Vec<u32>) -> Result<(), JobError> {
        self.processed.lock().unwrap().push(data);
        Ok(())
    }
}

async fn run_dataflow(props: &[(&str, &str)]) -> Vec<Vec<u32>> {
    let props: BTreeMap<String, String> = props
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let job = Numbers {
        batches: 3,
        fetched: Mutex::new(0),
        processed: Mutex::new(Vec::new()),
    };
    let flow = Arc::new(Dataflow::from_props(job, &props).unwrap());
    let handler: SharedHandler = flow.clone();
    handler.run_item(context()).await.unwrap();
    let processed = flow.job().processed.lock().unwrap().clone();
    processed
}

#[tokio::test]
async fn dataflow_job_configured_for_streaming_processes_until_the_data_runs_out() {
    let processed = run_dataflow(&[(STREAMING_PROP, "true")]).await;
    assert_eq!(processed, [[101], [102], [103]]);
}

#[tokio::test]
async fn dataflow_job_without_props_processes_one_batch() {
    assert_eq!(run_dataflow(&[]).await, [[101]]);
}

#[derive(Debug)]
struct FailsOnItemTwo;

#[async_trait]
impl SimpleJob for FailsOnItemTwo {
    async fn execute(&self, ctx: ShardingContext) -> Result<(), JobError> {
        match ctx.sharding_item.get() {
            2 => Err(JobError::failed(format!(
                "{} refused",
                ctx.sharding_parameter
            ))),
            _ => Ok(()),
        }
    }
}

#[tokio::test]
async fn simple_job_runs_once_per_item_with_its_own_result() {
    let handler: SharedHandler = Arc::new(Simple(FailsOnItemTwo));
    handler.run_item(context()).await.unwrap();
    let mut two = context();
    two.sharding_item = ShardItem(2);
    two.sharding_parameter = "Guangzhou".into();
    let err = handler.run_item(two).await.unwrap_err();
    assert_eq!(err, JobError::failed("Guangzhou refused"));
}
