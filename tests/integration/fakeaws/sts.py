"""fakeaws.sts: STS AssumeRoleWithWebIdentity as the Query API answers it: an unsigned
POST / with a form body (Action, Version, RoleArn, RoleSessionName, WebIdentityToken) and
the XML reply with Credentials/{AccessKeyId, SecretAccessKey, SessionToken, Expiration},
or an ErrorResponse. Not any other STS action."""

from xml.sax.saxutils import escape

from .base import RecordingServer

NS = "https://sts.amazonaws.com/doc/2011-06-15/"


def error(status, code, message):
    body = ('<ErrorResponse xmlns="%s"><Error><Type>Sender</Type><Code>%s</Code>'
            '<Message>%s</Message></Error><RequestId>fake</RequestId></ErrorResponse>'
            % (NS, escape(code), escape(message)))
    return status, {"Content-Type": "text/xml"}, body.encode()


class Sts(RecordingServer):
    """Accepts the web identity token `token` for role `role_arn` only."""

    def __init__(self, ledger, role_arn, token, lifetime=3600):
        super().__init__()
        self.ledger = ledger
        self.role_arn = role_arn
        self.token = token
        self.lifetime = lifetime
        self.issued = []

    def answer(self, req):
        if req.method != "POST" or req.path != "/":
            return error(404, "NotFound", "no such resource")
        f = req.form()
        if f.get("Action") != "AssumeRoleWithWebIdentity" or f.get("Version") != "2011-06-15":
            return error(400, "InvalidAction", "unknown action")
        if f.get("RoleArn") != self.role_arn:
            return error(403, "AccessDenied", "Not authorized to perform "
                                              "sts:AssumeRoleWithWebIdentity")
        if f.get("WebIdentityToken") != self.token:
            return error(400, "InvalidIdentityToken", "Incorrect token audience")
        c = self.ledger.issue("web-identity", self.lifetime)
        self.issued.append(c)
        body = (
            '<AssumeRoleWithWebIdentityResponse xmlns="%s">\n'
            "  <AssumeRoleWithWebIdentityResult>\n"
            "    <SubjectFromWebIdentityToken>system:serviceaccount:twice:worker"
            "</SubjectFromWebIdentityToken>\n"
            "    <AssumedRoleUser>\n"
            "      <Arn>arn:aws:sts::123456789012:assumed-role/twice/%s</Arn>\n"
            "      <AssumedRoleId>AROAFAKE:%s</AssumedRoleId>\n"
            "    </AssumedRoleUser>\n"
            "    <Credentials>\n"
            "      <SessionToken>%s</SessionToken>\n"
            "      <SecretAccessKey>%s</SecretAccessKey>\n"
            "      <Expiration>%s</Expiration>\n"
            "      <AccessKeyId>%s</AccessKeyId>\n"
            "    </Credentials>\n"
            "    <Provider>oidc.eks.us-east-1.amazonaws.com/id/FAKE</Provider>\n"
            "    <Audience>sts.amazonaws.com</Audience>\n"
            "  </AssumeRoleWithWebIdentityResult>\n"
            "  <ResponseMetadata><RequestId>fake</RequestId></ResponseMetadata>\n"
            "</AssumeRoleWithWebIdentityResponse>\n"
            % (NS, escape(f.get("RoleSessionName", "")), escape(f.get("RoleSessionName", "")),
               escape(c.token), escape(c.secret_access_key), c.expiration_text(),
               c.access_key_id))
        return 200, {"Content-Type": "text/xml"}, body.encode()
