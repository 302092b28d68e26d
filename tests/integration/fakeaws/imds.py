"""fakeaws.imds: the EC2 instance metadata service as IMDSv2 answers it with
HttpTokens=required: PUT /latest/api/token (with X-aws-ec2-metadata-token-ttl-seconds
between 1 and 21600) returns a session token; the GETs under /latest/meta-data/ need it in
X-aws-ec2-metadata-token (401 without). The role's credential document is the one EC2
serves (Code, LastUpdated, Type, AccessKeyId, SecretAccessKey, Token, Expiration).
Not the rest of the metadata tree."""

import json
import threading
import time

from .base import RecordingServer, iso_time, random_token

ROLE_PATH = "/latest/meta-data/iam/security-credentials/"
TOKEN_PATH = "/latest/api/token"


class Imds(RecordingServer):
    """IMDSv2 with one role. Each fetch of the role's credentials issues a new set
    (recorded in the ledger and in .issued) whose lifetime is the next of `lifetimes`
    (the last one repeats). token_status != 200 makes the token PUT fail with it (as an
    IMDSv1-only or disabled endpoint does); allow_v1 then lets GETs without a token in."""

    def __init__(self, ledger, role="twice-test-role", lifetimes=(6 * 3600,),
                 token_status=200, allow_v1=False):
        super().__init__()
        self.ledger = ledger
        self.role = role
        self.lifetimes = list(lifetimes)
        self.token_status = token_status
        self.allow_v1 = allow_v1
        self.tokens = set()
        self.issued = []
        self._issue_lock = threading.Lock()

    def _issue(self):
        with self._issue_lock:
            i = len(self.issued)
            life = self.lifetimes[min(i, len(self.lifetimes) - 1)]
            c = self.ledger.issue("imds", life)
            self.issued.append(c)
            return c

    def answer(self, req):
        if req.path == TOKEN_PATH:
            if req.method != "PUT":
                return 405, {}, b""
            if self.token_status != 200:
                return self.token_status, {}, b""
            ttl = req.headers.get("x-aws-ec2-metadata-token-ttl-seconds", "")
            if not ttl.isdigit() or not 1 <= int(ttl) <= 21600:
                return 400, {}, b"bad ttl"
            token = random_token()
            self.tokens.add(token)
            return 200, {"Content-Type": "text/plain",
                         "X-aws-ec2-metadata-token-ttl-seconds": ttl}, token.encode()
        if req.method != "GET":
            return 405, {}, b""
        token = req.headers.get("x-aws-ec2-metadata-token")
        if token is None and not self.allow_v1 or token is not None and token not in self.tokens:
            return 401, {}, b""
        if req.path == ROLE_PATH:
            return 200, {"Content-Type": "text/plain"}, self.role.encode()
        if req.path == ROLE_PATH + self.role:
            c = self._issue()
            doc = {"Code": "Success", "LastUpdated": iso_time(time.time()), "Type": "AWS-HMAC",
                   "AccessKeyId": c.access_key_id, "SecretAccessKey": c.secret_access_key,
                   "Token": c.token, "Expiration": c.expiration_text()}
            return 200, {"Content-Type": "text/plain"}, json.dumps(doc, indent=2).encode()
        return 404, {}, b""
