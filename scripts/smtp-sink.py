#!/usr/bin/python3
"""smtp-sink.py: the SMTP server of the test environment (Debian's python3-aiosmtpd).

For: accepting mail on 127.0.0.1 and storing each message as DIR/<n>.eml with its
envelope in DIR/<n>.json, so tests can read what twice sent. Not for: delivering mail
anywhere, or TLS. Started by scripts/testenv.sh; run with Debian's /usr/bin/python3.

Behaviour by recipient local part (case-insensitive prefix):
    tempfail-data...  accepted at RCPT, then 451 at DATA
    reject-data...    accepted at RCPT, then 550 at DATA
    tempfail...       451 at RCPT  ("451 4.3.0 twice-test-sink: temporary failure ...")
    unavailable...    421 at RCPT  ("421 4.3.2 twice-test-sink: service not available ...")
    reject...         550 at RCPT  ("550 5.1.1 twice-test-sink: mailbox ... rejected ...")
    anything else     accepted
and by the client's EHLO/HELO name (curl's is the smtp:// URL's path), prefix:
    refuse-ehlo...    554 to EHLO and to HELO, as a relay that refuses this client
                      ("554 5.7.1 twice-test-sink: no service for <name> ...")
and by sender (MAIL FROM) local part:
    auth-required...  530 at MAIL FROM, whether the client authenticated or not, as
                      a relay that wants a login the client has not given
                      ("530 5.7.0 twice-test-sink: authentication required ...")
AUTH PLAIN and LOGIN are offered without TLS and are optional: a client that does not
authenticate is served too; one that authenticates with a wrong password gets 535.
"""

import argparse
import asyncio
import json
import os
import re
import signal
import sys
import time

from aiosmtpd.smtp import SMTP, AuthResult, LoginPassword

TEMPFAIL = "451 4.3.0 twice-test-sink: temporary failure for <%s> (tempfail address)"
UNAVAILABLE = "421 4.3.2 twice-test-sink: service not available for <%s> (unavailable address)"
REJECT = "550 5.1.1 twice-test-sink: mailbox <%s> rejected (reject address)"
REFUSE_EHLO = "554 5.7.1 twice-test-sink: no service for <%s> (refuse-ehlo client name)"
AUTH_REQUIRED = ("530 5.7.0 twice-test-sink: authentication required to send as <%s> "
                 "(auth-required sender)")


def local_part(address):
    return address.rsplit("@", 1)[0].lower()


class Sink:
    """aiosmtpd handler: decides per recipient, stores accepted messages."""

    def __init__(self, maildir, user, password):
        self.maildir = maildir
        self.user = user
        self.password = password
        numbers = [int(m.group(1)) for m in
                   (re.fullmatch(r"(\d+)\.json", n) for n in os.listdir(maildir)) if m]
        self.next = max(numbers, default=0) + 1

    def authenticate(self, server, session, envelope, mechanism, auth_data):
        ok = (isinstance(auth_data, LoginPassword)
              and auth_data.login.decode("utf-8", "replace") == self.user
              and auth_data.password.decode("utf-8", "replace") == self.password)
        return AuthResult(success=ok, handled=False,
                          auth_data=auth_data.login.decode("utf-8", "replace") if ok else None)

    async def handle_EHLO(self, server, session, envelope, hostname, responses):
        if hostname.lower().startswith("refuse-ehlo"):
            return [REFUSE_EHLO % hostname]
        session.host_name = hostname
        return responses

    async def handle_HELO(self, server, session, envelope, hostname):
        if hostname.lower().startswith("refuse-ehlo"):
            return REFUSE_EHLO % hostname
        session.host_name = hostname
        return "250 twice-test-sink"

    async def handle_MAIL(self, server, session, envelope, address, mail_options):
        if local_part(address).startswith("auth-required"):
            return AUTH_REQUIRED % address
        envelope.mail_from = address
        envelope.mail_options.extend(mail_options)
        return "250 OK"

    async def handle_RCPT(self, server, session, envelope, address, rcpt_options):
        local = local_part(address)
        if not local.startswith(("tempfail-data", "reject-data")):
            if local.startswith("tempfail"):
                return TEMPFAIL % address
            if local.startswith("unavailable"):
                return UNAVAILABLE % address
            if local.startswith("reject"):
                return REJECT % address
        envelope.rcpt_tos.append(address)
        envelope.rcpt_options.extend(rcpt_options)
        return "250 OK"

    async def handle_DATA(self, server, session, envelope):
        for rcpt in envelope.rcpt_tos:
            if local_part(rcpt).startswith("tempfail-data"):
                return TEMPFAIL % rcpt
            if local_part(rcpt).startswith("reject-data"):
                return REJECT % rcpt
        n = self.next
        self.next += 1
        self.store(n, session, envelope)
        return "250 2.0.0 twice-test-sink: stored as %d" % n

    def store(self, n, session, envelope):
        """Write <n>.eml, then <n>.json: a sidecar present means the message is whole."""
        data = envelope.original_content or envelope.content
        if isinstance(data, str):
            data = data.encode("utf-8")
        meta = {
            "n": n,
            "mail_from": envelope.mail_from,
            "rcpt_tos": list(envelope.rcpt_tos),
            "auth_user": session.auth_data if session.authenticated else None,
            "helo": session.host_name,
            "peer": session.peer[0] if session.peer else None,
            "received_at": time.time(),
            "size": len(data),
        }
        for name, content in (("%d.eml" % n, data),
                              ("%d.json" % n, json.dumps(meta, indent=1).encode())):
            tmp = os.path.join(self.maildir, "." + name + ".tmp")
            with open(tmp, "wb") as f:
                f.write(content)
            os.rename(tmp, os.path.join(self.maildir, name))


async def serve(args):
    os.makedirs(args.dir, exist_ok=True)
    sink = Sink(args.dir, args.user, args.password)
    loop = asyncio.get_running_loop()
    server = await loop.create_server(
        lambda: SMTP(sink, hostname="twice-test-sink", decode_data=False,
                     authenticator=sink.authenticate, auth_require_tls=False,
                     auth_required=False),
        host="127.0.0.1", port=args.port)
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    if args.pidfile:
        with open(args.pidfile, "w", encoding="utf-8") as f:
            f.write("%d\n" % os.getpid())
    print("smtp-sink listening on 127.0.0.1:%d, storing into %s" % (args.port, args.dir),
          flush=True)
    await stop.wait()
    server.close()
    await server.wait_closed()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--dir", required=True, help="where <n>.eml and <n>.json go")
    p.add_argument("--user", default="twice")
    p.add_argument("--password", default="twice-smtp-test")
    p.add_argument("--pidfile")
    asyncio.run(serve(p.parse_args()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
