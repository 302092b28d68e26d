"""fakeaws.sts: STS as the Query API answers it: POST / with a form body (Action,
Version, RoleArn, RoleSessionName, ...) and the XML reply with
Credentials/{AccessKeyId, SecretAccessKey, SessionToken, Expiration}, or an
ErrorResponse. Two actions: AssumeRoleWithWebIdentity (unsigned, with
WebIdentityToken) and AssumeRole (SigV4-signed for service sts with the caller's
credentials, which must be ones the ledger knows, live, and trusted by the role). Not
any other STS action."""

from xml.sax.saxutils import escape

from .base import RecordingServer, check_signature

NS = "https://sts.amazonaws.com/doc/2011-06-15/"


def error(status, code, message):
    body = ('<ErrorResponse xmlns="%s"><Error><Type>Sender</Type><Code>%s</Code>'
            '<Message>%s</Message></Error><RequestId>fake</RequestId></ErrorResponse>'
            % (NS, escape(code), escape(message)))
    return status, {"Content-Type": "text/xml"}, body.encode()


ASSUMED = (
    '<AssumeRoleResponse xmlns="%s">\n'
    "  <AssumeRoleResult>\n"
    "    <AssumedRoleUser>\n"
    "      <Arn>%s/%s</Arn>\n"
    "      <AssumedRoleId>AROAFAKE:%s</AssumedRoleId>\n"
    "    </AssumedRoleUser>\n"
    "    <Credentials>\n"
    "      <AccessKeyId>%s</AccessKeyId>\n"
    "      <SecretAccessKey>%s</SecretAccessKey>\n"
    "      <SessionToken>%s</SessionToken>\n"
    "      <Expiration>%s</Expiration>\n"
    "    </Credentials>\n"
    "  </AssumeRoleResult>\n"
    "  <ResponseMetadata><RequestId>fake</RequestId></ResponseMetadata>\n"
    "</AssumeRoleResponse>\n")


class Sts(RecordingServer):
    """Accepts the web identity token `token` for role `role_arn` only, and AssumeRole
    for the roles of `roles`: role ARN -> who may assume it, an access key id (a
    profile's static keys) or "role:ARN" (credentials this fake issued for that role).
    Each AssumeRole issues credentials with source "role:ARN" and the lifetime of
    `lifetimes` for the role (else `lifetime`), recorded in .assumed as
    (role ARN, caller's access key id, form, credentials)."""

    def __init__(self, ledger, role_arn=None, token=None, lifetime=3600, roles=None,
                 lifetimes=None):
        super().__init__()
        self.ledger = ledger
        self.role_arn = role_arn
        self.token = token
        self.lifetime = lifetime
        self.roles = dict(roles or {})
        self.lifetimes = dict(lifetimes or {})
        self.issued = []
        self.assumed = []

    def answer(self, req):
        if req.method != "POST" or req.path != "/":
            return error(404, "NotFound", "no such resource")
        f = req.form()
        if f.get("Version") != "2011-06-15":
            return error(400, "InvalidAction", "unknown version")
        if f.get("Action") == "AssumeRole":
            return self.assume_role(req, f)
        if f.get("Action") != "AssumeRoleWithWebIdentity":
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

    def assume_role(self, req, f):
        problem = check_signature(self.ledger, req, "sts")
        if problem is not None:
            req.note = "%s: %s" % problem
            return error(403, *problem)
        arn = f.get("RoleArn", "")
        caller = self.ledger.get(req.access_key_id)
        trusted = self.roles.get(arn)
        if trusted is None or (caller.access_key_id != trusted and caller.source != trusted):
            req.note = "untrusted caller %s for %s" % (req.access_key_id, arn)
            return error(403, "AccessDenied", "User %s is not authorized to perform: "
                                              "sts:AssumeRole on resource: %s"
                         % (req.access_key_id, arn))
        if not f.get("RoleSessionName"):
            return error(400, "ValidationError", "RoleSessionName is required")
        c = self.ledger.issue("role:" + arn, self.lifetimes.get(arn, self.lifetime))
        self.assumed.append((arn, req.access_key_id, f, c))
        session = escape(f["RoleSessionName"])
        body = ASSUMED % (NS, escape(arn.replace(":role/", ":assumed-role/")), session,
                          session, c.access_key_id, escape(c.secret_access_key),
                          escape(c.token), c.expiration_text())
        return 200, {"Content-Type": "text/xml"}, body.encode()
