"""fakeaws.sqsproxy: a recording proxy between twiced and the SQS emulator that checks
each request as AWS would before passing it on: the Authorization header's key id must
be one the ledger knows, the credentials must not have expired, a session token must be
sent (and signed) exactly when the credentials have one, and the SigV4 signature,
recomputed here with the secret the fake provider handed out, must match. A request that
fails any check is answered 403 in the SQS JSON error format and never reaches the
emulator. The emulator does not check signatures itself; this is what makes the tests'
signature checks real."""

import json
import urllib.error
import urllib.request

from .base import RecordingServer, check_signature

# Headers that are the connection's, not the request's: not passed on.
HOP = {"host", "connection", "content-length", "transfer-encoding", "keep-alive", "expect"}


def sqs_error(status, code, message):
    body = json.dumps({"__type": "com.amazon.coral.service#" + code, "message": message})
    return status, {"Content-Type": "application/x-amz-json-1.0",
                    "x-amzn-query-error": code + ";Sender"}, body.encode()


class SqsProxy(RecordingServer):
    """Each recorded request gets .target (the SQS action), .access_key_id, .token_signed
    and .note (None when it passed every check, else why it was refused)."""

    def __init__(self, ledger, upstream):
        super().__init__()
        self.ledger = ledger
        self.upstream = upstream.rstrip("/") + "/"

    def refused(self):
        return [r for r in self.requests() if r.note is not None]

    def passed(self):
        return [r for r in self.requests() if r.note is None]

    def check(self, req):
        """None when req is signed right with live credentials, else (code, message)."""
        return check_signature(self.ledger, req, "sqs")

    def answer(self, req):
        req.target = req.headers.get("x-amz-target", "").replace("AmazonSQS.", "")
        problem = self.check(req)
        if problem is not None:
            req.note = "%s: %s" % problem
            return sqs_error(403, *problem)
        headers = {k: v for k, v in req.headers.items() if k not in HOP}
        fwd = urllib.request.Request(self.upstream, data=req.body, headers=headers,
                                     method=req.method)
        try:
            with urllib.request.urlopen(fwd, timeout=60) as resp:
                return resp.status, self._headers(resp.headers), resp.read()
        except urllib.error.HTTPError as e:
            return e.code, self._headers(e.headers), e.read()

    @staticmethod
    def _headers(h):
        return {k: v for k, v in h.items() if k.lower() not in HOP}
