"""A throwaway PostgreSQL 15 server (Debian's /usr/lib/postgresql/15/bin) for the Debezium
tests and bench/cdc.py: initdb into a directory of the caller's, logical decoding on, a
free loopback port, and psql for SQL. As root, the server runs as user `postgres`
(initdb and postgres refuse to run as root)."""

import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from conftest import free_port

PG_BIN = Path(os.environ.get("EDDY_PG_BIN", "/usr/lib/postgresql/15/bin"))
SUPERUSER = "postgres"
PASSWORD = "eddy-test"


def available() -> bool:
    return (PG_BIN / "postgres").exists()


class Postgres:
    def __init__(self, parent=None, fsync: bool = False):
        # Not pytest's tmp_path: that is private to root (0700), and the server may have
        # to run as another user. A directory of its own, handed to that user.
        self.dir = Path(tempfile.mkdtemp(prefix="eddy-pg-", dir=parent))
        self.data = self.dir / "data"
        self.log = self.dir / "postgres.log"
        self.port = free_port()
        self.fsync = fsync
        self.proc = None
        self._as = {}
        if os.geteuid() == 0:
            pw = pwd.getpwnam(os.environ.get("EDDY_PG_USER", "postgres"))
            os.chown(self.dir, pw.pw_uid, pw.pw_gid)
            self._as = {"user": pw.pw_uid, "group": pw.pw_gid, "extra_groups": []}

    def _run(self, args, **kw):
        return subprocess.run(args, check=True, capture_output=True, text=True,
                              cwd=self.dir, **self._as, **kw)

    def start(self, timeout: float = 60) -> "Postgres":
        if not self.data.exists():
            pwfile = self.dir / "pwfile"
            pwfile.write_text(PASSWORD + "\n")
            if self._as:
                os.chown(pwfile, self._as["user"], self._as["group"])
            self._run([str(PG_BIN / "initdb"), "-D", str(self.data), "-U", SUPERUSER,
                       f"--pwfile={pwfile}", "--auth-local=trust", "--auth-host=scram-sha-256",
                       "--encoding=UTF8", "--locale=C"], timeout=120)
        settings = {
            "listen_addresses": "127.0.0.1",
            "port": str(self.port),
            "unix_socket_directories": str(self.dir),
            # Debezium reads changes through logical decoding (pgoutput) over a
            # replication connection, from a slot of its own.
            "wal_level": "logical",
            "max_wal_senders": "4",
            "max_replication_slots": "4",
            # Tests need no durability from PostgreSQL; the benchmark keeps it.
            "fsync": "on" if self.fsync else "off",
            "synchronous_commit": "on" if self.fsync else "off",
            "shared_buffers": "64MB",
        }
        args = [str(PG_BIN / "postgres"), "-D", str(self.data)]
        for k, v in settings.items():
            args += ["-c", f"{k}={v}"]
        log = open(self.log, "ab")
        self.proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT,
                                     cwd=self.dir, **self._as)
        log.close()
        deadline = time.time() + timeout
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"postgres exited with {self.proc.returncode}:\n"
                                   + self.log.read_text(errors="replace")[-3000:])
            ready = subprocess.run([str(PG_BIN / "pg_isready"), "-q", "-h", "127.0.0.1",
                                    "-p", str(self.port)])
            if ready.returncode == 0:
                return self
            if time.time() > deadline:
                self.stop()
                raise RuntimeError("postgres did not become ready:\n"
                                   + self.log.read_text(errors="replace")[-3000:])
            time.sleep(0.2)

    def psql(self, sql: str, db: str = "postgres", user: str = SUPERUSER,
             password: str = PASSWORD, script: bool = False) -> list:
        """Runs `sql` (stops at the first error) and returns the result rows, each a list
        of column strings (unaligned, tab-separated, NULL as \\N). Several statements
        are one transaction, unless `script`: then each commits on its own (psql reads
        them from stdin, one by one)."""
        out = subprocess.run(
            [str(PG_BIN / "psql"), "-X", "-q", "-v", "ON_ERROR_STOP=1", "-At", "-F", "\t",
             "-P", "null=\\N", "-h", "127.0.0.1", "-p", str(self.port), "-U", user, "-d", db,
             *(["-f", "-"] if script else ["-c", sql])],
            input=sql if script else None,
            check=True, capture_output=True, text=True, timeout=600,
            env=dict(os.environ, PGPASSWORD=password),
        )
        return [line.split("\t") for line in out.stdout.splitlines() if line]

    def halt(self) -> None:
        """Immediate shutdown (SIGQUIT), keeping the data: `start` brings the same
        server back on the same port."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGQUIT)
            self.proc.wait(timeout=30)
        self.proc = None

    def stop(self) -> None:
        """Immediate shutdown (SIGQUIT), then SIGKILL; the directory goes with it."""
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.send_signal(signal.SIGQUIT)
                try:
                    self.proc.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait()
            self.proc = None
        shutil.rmtree(self.dir, ignore_errors=True)
