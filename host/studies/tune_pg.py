"""A throwaway PostgreSQL cluster in a temporary folder (initdb + pg_ctl, a unix socket in
that folder, no TCP): the database side of `linkteam tune --storage postgresql://...` on one
machine, for the tests and the measurements in experiments/tuning/. The server refuses to
run as root; as root the cluster runs as the `postgres` user (Debian's package makes it) or
else `nobody`, in a folder that user owns.

    with Cluster() as pg:
        subprocess.run(["linkteam", "tune", ..., "--storage", pg.url])
"""
import glob
import os
import pwd
import shutil
import subprocess
import tempfile
from pathlib import Path

DB = "linkteam"


def pg_bin(name):
    """A PostgreSQL server program (initdb, pg_ctl): on PATH, else Debian's
    /usr/lib/postgresql/<version>/bin (the newest); None when absent."""
    found = shutil.which(name)
    if found:
        return found
    for d in sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(Path(p).parent.name), reverse=True):
        if os.access(os.path.join(d, name), os.X_OK):
            return os.path.join(d, name)
    return None


def missing():
    """Why this machine cannot start a cluster (None when it can)."""
    absent = [n for n in ("initdb", "pg_ctl") if not pg_bin(n)]
    if absent:
        return "needs PostgreSQL's %s (Debian: apt-get install postgresql; .ci/run installs it)" % ", ".join(absent)
    try:
        import psycopg  # noqa: F401
    except ImportError:
        return "needs psycopg (PyPI; make setup)"
    return None


def _server_user():
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        try:
            return pwd.getpwnam(name)
        except KeyError:
            continue
    raise RuntimeError("running as root, and neither a postgres nor a nobody user to run PostgreSQL as")


class Cluster:
    """initdb + pg_ctl start on enter; pg_ctl stop and the folder removed on exit, also
    after an error."""

    def __init__(self, max_connections=100):
        self.max_connections = max_connections
        self.dir = None
        self.started = False

    @property
    def url(self):
        return "postgresql://%s@/%s?host=%s" % (DB, DB, self.dir)

    def _run(self, *args, check=True):
        user = _server_user()
        kw = {"user": user.pw_uid, "group": user.pw_gid, "extra_groups": []} if user else {}
        return subprocess.run(args, cwd=self.dir, capture_output=True, text=True, timeout=120, check=check, **kw)

    def __enter__(self):
        self.dir = tempfile.mkdtemp(prefix="linkteam-pg-")
        try:
            user = _server_user()
            if user:
                os.chown(self.dir, user.pw_uid, user.pw_gid)
            data = os.path.join(self.dir, "data")
            self._run(pg_bin("initdb"), "-D", data, "-U", DB, "-A", "trust", "-E", "UTF8", "--no-locale", "--no-sync")
            opts = ("-c listen_addresses='' -c unix_socket_directories='%s' -c fsync=off -c max_connections=%d"
                    % (self.dir, self.max_connections))
            self.started = True   # pg_ctl may leave a server behind even when it reports failure
            self._run(pg_bin("pg_ctl"), "-D", data, "-o", opts, "-l", os.path.join(self.dir, "server.log"), "-w", "start")
            self.sql("CREATE DATABASE %s" % DB, db="postgres")
        except BaseException as e:
            log = self.log()
            self.__exit__(None, None, None)
            if isinstance(e, subprocess.CalledProcessError):
                raise RuntimeError("PostgreSQL did not start: %s\n%s%s" % (e, e.stderr, log)) from e
            raise
        return self

    def sql(self, query, db=DB):
        """Rows of one statement, on its own connection (autocommit)."""
        import psycopg
        with psycopg.connect(dbname=db, user=DB, host=self.dir, autocommit=True, connect_timeout=10) as conn:
            cur = conn.execute(query)
            return cur.fetchall() if cur.description else []

    def connections(self):
        """Client connections to the study database now (pg_stat_activity), this query's excluded."""
        return self.sql("SELECT count(*) FROM pg_stat_activity WHERE datname = '%s' AND pid <> pg_backend_pid()" % DB)[0][0]

    def stop(self, mode="fast"):
        """pg_ctl stop: fast (clients disconnected), immediate (as a crash would)."""
        if self.started:
            self._run(pg_bin("pg_ctl"), "-D", os.path.join(self.dir, "data"), "-m", mode, "-w", "stop", check=False)
            self.started = False

    def log(self):
        try:
            return Path(self.dir, "server.log").read_text()
        except (OSError, TypeError):
            return ""

    def __exit__(self, *exc):
        try:
            self.stop("immediate")
        finally:
            if self.dir:
                shutil.rmtree(self.dir, ignore_errors=True)
        return False
