"""A nightly listpipe import as an Airflow DAG.

The task runs `listpipe run` in the listpipe image (see the Dockerfile at the repository
root) and keeps the JSON run report. Exit codes are read as the README documents them:

- 0: everything written: success.
- 1: finished, but some rows were rejected (the rejects file says which): a normal night for
  messy exports, so success with a warning. Airflow has no such state, so the command maps 1
  to 0 after printing a `listpipe: partial` line that log searches and alerts can find.
- anything else (2 pipeline or URL source error, 3 target down or token refused, 4 another run
  in progress, 5 mirror guard, 74 state unwritable, 130 stopped): the task fails, and Airflow's
  retries apply. `--resume` makes the retry continue the interrupted run.

Credentials come from Airflow connections or variables as environment variables, never on
the command line: `LISTPIPE_TOKEN` for the target, and a URL source's password inside a
secret-backed variable if the export is behind basic auth.
"""

from __future__ import annotations

import pendulum
from airflow import DAG
from airflow.operators.bash import BashOperator

# The folder holding the pipelines and `.listpipe/` (journal, ledgers, remembered ETags).
# It must persist between runs: `--resume` and the ETag skip read it.
WORKDIR = "/srv/listpipe"
PIPELINE = "pipelines/nightly.toml"

LISTPIPE = f"""
set -u
cd {WORKDIR}
listpipe run {PIPELINE} --resume --quiet --report reports/nightly-{{{{ ds }}}}.json
code=$?
case "$code" in
  0) exit 0 ;;
  1) echo "listpipe: partial: some rows were rejected; see reports/nightly-{{{{ ds }}}}.json"; exit 0 ;;
  *) echo "listpipe: failed with exit code $code"; exit "$code" ;;
esac
"""

with DAG(
    dag_id="listpipe_nightly",
    schedule="30 2 * * *",
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    # One run at a time: listpipe also refuses a second one (exit 4), this avoids trying.
    max_active_runs=1,
    default_args={"retries": 2, "retry_delay": pendulum.duration(minutes=10)},
    tags=["listpipe"],
) as dag:
    BashOperator(
        task_id="import",
        bash_command=LISTPIPE,
        env={
            "LISTPIPE_TOKEN": "{{ conn.listpipe_target.password }}",
            "PATH": "/usr/local/bin:/usr/bin:/bin",
        },
        append_env=True,
    )

# With the image instead of a local binary, the same command in a DockerOperator
# (apache-airflow-providers-docker):
#
#   from airflow.providers.docker.operators.docker import DockerOperator
#   from docker.types import Mount
#   DockerOperator(
#       task_id="import",
#       image="listpipe:latest",
#       entrypoint=["/bin/sh", "-c"],
#       command=LISTPIPE.replace(f"cd {WORKDIR}", "cd /work"),
#       mounts=[Mount(source=WORKDIR, target="/work", type="bind")],
#       environment={"LISTPIPE_TOKEN": "{{ conn.listpipe_target.password }}"},
#   )
#
# The image's final stage is debian:bookworm-slim, which has /bin/sh.
