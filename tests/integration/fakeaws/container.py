"""fakeaws.container: the ECS / EKS Pod Identity container credentials endpoint: GET of
one path, answered with the JSON document ECS serves (AccessKeyId, SecretAccessKey,
Token, Expiration, RoleArn) when the Authorization header carries the expected token
(401 otherwise). Not the task metadata endpoint."""

import json

from .base import RecordingServer


class Container(RecordingServer):
    def __init__(self, ledger, path="/v2/credentials/3e9a7c51-task", token=None, lifetime=3600):
        super().__init__()
        self.ledger = ledger
        self.path = path
        self.token = token
        self.lifetime = lifetime
        self.issued = []

    def answer(self, req):
        if req.method != "GET" or req.path != self.path:
            return 404, {}, b'{"code": "NotFound"}'
        if self.token is not None and req.headers.get("authorization") != self.token:
            return 401, {}, b'{"code": "Unauthorized"}'
        c = self.ledger.issue("container", self.lifetime)
        self.issued.append(c)
        doc = {"AccessKeyId": c.access_key_id, "SecretAccessKey": c.secret_access_key,
               "Token": c.token, "Expiration": c.expiration_text(),
               "RoleArn": "arn:aws:iam::123456789012:role/twice-task"}
        return 200, {"Content-Type": "application/json"}, json.dumps(doc).encode()
