"""Debian's Dovecot as a real IMAP server on 127.0.0.1: started in a temporary directory on a
free port with its own configuration (any user signs in with `PASSWORD`; each user's
mail in a Maildir of its own), and stopped at the end. A message "arrives" by IMAP APPEND,
as a mail server's delivery would leave it in the mailbox."""

from __future__ import annotations

import contextlib
import imaplib
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from tests.support.cli import free_port

PASSWORD = "mailbox-secret"  # noqa: S105 (a test server's password)

_CONFIG = """
base_dir = {root}/run
state_dir = {root}/state
log_path = {root}/dovecot.log
instance_name = agentsvc-test-{port}
protocols = imap
listen = 127.0.0.1
ssl = no
disable_plaintext_auth = no
auth_mechanisms = plain login
mail_location = maildir:{root}/mail/%u
default_internal_user = {internal}
default_login_user = {login}
first_valid_uid = 0
passdb {{
  driver = static
  args = password={password}
}}
userdb {{
  driver = static
  args = uid={mail_uid} gid={mail_gid} home={root}/mail/%u
}}
service imap-login {{
  chroot =
  inet_listener imap {{
    address = 127.0.0.1
    port = {port}
  }}
  inet_listener imaps {{
    port = 0
  }}
}}
service anvil {{
  chroot =
}}
"""


class Dovecot:
    """One Dovecot instance; `deliver` puts a message in a user's INBOX."""

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="dovecot-"))
        self.port = free_port()
        self._binary = shutil.which("dovecot") or "/usr/sbin/dovecot"

    def start(self) -> Dovecot:
        if not os.path.exists(self._binary):
            raise RuntimeError("Dovecot is missing: bash scripts/install_test_deps.sh installs it")
        if os.geteuid() == 0:  # Dovecot's own unprivileged users (Debian's package makes them)
            internal, login, mail = "dovecot", "dovenull", pwd.getpwnam("dovecot")
        else:
            me = pwd.getpwuid(os.geteuid())
            internal = login = me.pw_name
            mail = me
        for folder in ("run", "state", "mail"):
            (self.root / folder).mkdir()
        os.chmod(self.root, 0o755)  # noqa: S103 (Dovecot's own users read its configuration)
        os.chown(self.root / "mail", mail.pw_uid, mail.pw_gid)
        config = self.root / "dovecot.conf"
        config.write_text(
            _CONFIG.format(
                root=self.root,
                port=self.port,
                internal=internal,
                login=login,
                password=PASSWORD,
                mail_uid=mail.pw_uid,
                mail_gid=mail.pw_gid,
            )
        )
        subprocess.run([self._binary, "-c", str(config)], check=True, timeout=30)
        deadline = time.monotonic() + 15
        while True:
            try:
                with imaplib.IMAP4("127.0.0.1", self.port, timeout=2) as imap:
                    imap.noop()
                return self
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"Dovecot did not start: {self._log()[-2000:]}") from None
                time.sleep(0.05)

    def _log(self) -> str:
        path = self.root / "dovecot.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def stop(self) -> None:
        pid_file = self.root / "run" / "master.pid"
        with contextlib.suppress(OSError, ValueError):
            pid = int(pid_file.read_text().strip())
            os.kill(pid, signal.SIGTERM)
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                os.kill(pid, 0)
                time.sleep(0.05)
        shutil.rmtree(self.root, ignore_errors=True)

    def _imap(self, user: str) -> imaplib.IMAP4:
        imap = imaplib.IMAP4("127.0.0.1", self.port, timeout=10)
        imap.login(user, PASSWORD)
        return imap

    def deliver(self, user: str, raw: bytes, mailbox: str = "INBOX") -> None:
        """A message arrives in the user's mailbox (unread)."""
        with self._imap(user) as imap:
            if mailbox != "INBOX":
                imap.create(mailbox)
            status, said = imap.append(mailbox, None, None, raw)
            assert status == "OK", said

    def unread(self, user: str, mailbox: str = "INBOX") -> int:
        """How many messages of the user's mailbox are not marked read."""
        with self._imap(user) as imap:
            imap.select(mailbox)
            status, found = imap.uid("search", None, "UNSEEN")
            assert status == "OK"
            return len(found[0].split())
