"""twiced finds its AWS credentials the way the AWS SDKs do.

Each source of the chain supplies credentials in its own test, from a fake of its own
(fakeaws: IMDSv2, the container endpoint, STS) or from files and processes, and the tests
assert the exact requests twiced makes to it. Every SQS request goes through
fakeaws.SqsProxy, which recomputes the SigV4 signature (X-Amz-Security-Token included)
with the credentials the fake handed out and refuses anything wrong or expired, so "the
messages were processed" means "signed right with live credentials". Also: the chain's
order, a configured source that fails stops the chain, and credentials with 5 minutes
left are refreshed ahead of expiry with no failed request (that test takes ~3 minutes).
"""

import copy
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import unittest

import fakeaws
import twicetest
import twiceconf as tc

EFFECT_TX = "effect-tx"
ROLE_PATH = "/latest/meta-data/iam/security-credentials/"


class CredsTest(twicetest.TwiceTestCase):
    def setUp(self):
        super().setUp()
        self.ledger = fakeaws.Ledger()
        self.proxy = self.fake(fakeaws.SqsProxy(self.ledger, self.env.sqs_endpoint))
        self.tmp = tempfile.mkdtemp(prefix="creds-", dir=self.env.run_dir)
        self.home = os.path.join(self.tmp, "home")
        os.mkdir(self.home)
        self.url, self.dlq = self.queue_pair("creds")
        self.dsn = self.new_database("creds")
        self.pg.query(self.dsn, tc.EFFECTS_TABLE)
        proxied = copy.copy(self.env)
        proxied.sqs_endpoint = self.proxy.url
        self.conf = tc.config(proxied, self.dsn, [tc.queue("creds", self.url, self.dlq,
                                                           EFFECT_TX)],
                              [tc.plugin(EFFECT_TX, tc.test_plugin(self.env, "effect_tx"))])
        self.secrets = []  # texts that must never appear in twiced's log

    def per_process(self, seq, unit):
        """seq is unit once per process that fetched credentials: the worker, and the
        master's DLQ monitor (it reads DLQ depths with credentials of its own).
        Returns how many times."""
        unit = list(unit)
        k = len(seq) // max(1, len(unit))
        self.assertIn(k, (1, 2), seq)
        # The two processes fetch at the same time: their requests interleave.
        self.assertEqual(sorted(seq), sorted(unit * k))
        return k

    def fake(self, server):
        server.start()
        self.addCleanup(server.stop)
        return server

    def isolated_env(self, **extra):
        """twiced's environment with no credentials of any source but the ones given: no
        AWS keys, a HOME without .aws, shared files that do not exist, no IMDS."""
        env = {"AWS_ACCESS_KEY_ID": None, "AWS_SECRET_ACCESS_KEY": None, "HOME": self.home,
               "AWS_CONFIG_FILE": os.path.join(self.tmp, "no-config"),
               "AWS_SHARED_CREDENTIALS_FILE": os.path.join(self.tmp, "no-credentials"),
               "AWS_EC2_METADATA_DISABLED": "true"}
        env.update(extra)
        return env

    def write(self, name, text, mode=0o600):
        path = os.path.join(self.tmp, name)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(path, mode)
        return path

    def effects(self):
        return self.pg.query(self.dsn, "SELECT key FROM effects ORDER BY at")

    def run_jobs(self, extra_env, count=3, prefix="job"):
        """Start twiced, have it process `count` messages, stop it; returns it."""
        d = self.start_twiced(self.conf, extra_env=extra_env)
        d.wait_log(r"ready: generation 1", timeout=20)
        before = len(self.effects())
        for i in range(count):
            self.sqs.send(self.url, json.dumps({"id": "%s-%d" % (prefix, i)}))
        twicetest.wait_until(lambda: len(self.effects()) >= before + count, timeout=30,
                             message="twiced did not process the messages")
        twicetest.wait_until(lambda: self.sqs.counts(self.url) == (0, 0, 0), timeout=30)
        self.assertEqual(d.stop(), 0)
        self.assert_no_secrets(d)
        return d

    def assert_signed_with(self, creds, since=0.0):
        """Every SQS request twiced made (after `since`) passed the proxy's checks and was
        signed with one of creds, the session token signed along when there is one."""
        self.assertEqual([(r.target, r.note) for r in self.proxy.refused()], [],
                         "requests the proxy refused")
        reqs = [r for r in self.proxy.passed() if r.at >= since]
        self.assertTrue(reqs, "no SQS request reached the proxy")
        by_id = {c.access_key_id: c for c in creds}
        for r in reqs:
            self.assertIn(r.access_key_id, by_id, "%s signed with an unexpected key" % r.target)
            self.assertEqual(r.token_signed, by_id[r.access_key_id].token is not None)
        targets = {r.target for r in reqs}
        self.assertIn("ReceiveMessage", targets)
        self.assertTrue(targets & {"DeleteMessageBatch", "DeleteMessage"}, targets)
        return reqs

    def assert_no_secrets(self, d):
        log = d.log_text()
        for c in self.ledger.all():
            self.assertNotIn(c.secret_access_key, log)
            if c.token:
                self.assertNotIn(c.token, log)
        for s in self.secrets:
            self.assertNotIn(s, log)


class Sources(CredsTest):
    def test_env_with_session_token(self):
        token = fakeaws.random_token(120)
        creds = self.ledger.add(twicetest.TEST_ACCESS_KEY_ID, twicetest.TEST_SECRET_ACCESS_KEY,
                                token)
        self.run_jobs(self.isolated_env(AWS_ACCESS_KEY_ID=twicetest.TEST_ACCESS_KEY_ID,
                                        AWS_SECRET_ACCESS_KEY=twicetest.TEST_SECRET_ACCESS_KEY,
                                        AWS_SESSION_TOKEN=token))
        self.assert_signed_with([creds])

    def test_imds_v2(self):
        imds = self.fake(fakeaws.Imds(self.ledger))
        self.run_jobs(self.isolated_env(AWS_EC2_METADATA_DISABLED=None,
                                        AWS_EC2_METADATA_SERVICE_ENDPOINT=imds.url))
        self.assert_signed_with(imds.issued)
        reqs = imds.requests()
        k = self.per_process([(r.method, r.path) for r in reqs],
                             [("PUT", "/latest/api/token"), ("GET", ROLE_PATH),
                              ("GET", ROLE_PATH + imds.role)])
        # The processes' requests may interleave: judge each by its kind.
        for r in reqs:
            if r.method == "PUT":
                self.assertEqual(r.headers.get("x-aws-ec2-metadata-token-ttl-seconds"), "21600")
                self.assertNotIn("x-aws-ec2-metadata-token", r.headers)
            else:
                self.assertIn(r.headers.get("x-aws-ec2-metadata-token"), imds.tokens)
        self.assertEqual({r.status for r in reqs}, {200})
        self.assertEqual(len(imds.issued), k, "6-hour credentials are fetched once")
        self.secrets.extend(imds.tokens)

    def test_imds_v1_fallback_only_when_asked(self):
        imds = self.fake(fakeaws.Imds(self.ledger, token_status=403, allow_v1=True))
        env = self.isolated_env(AWS_EC2_METADATA_DISABLED=None,
                                AWS_EC2_METADATA_SERVICE_ENDPOINT=imds.url)
        d = self.start_twiced(self.conf, extra_env=env)
        d.wait_log(r"not ready: ", timeout=20)  # no credentials: never ready
        d.wait_log(r"CredentialsError: no AWS credentials: tried env", timeout=15)
        self.assertEqual(d.stop(), 0)
        self.assertEqual({(r.method, r.path) for r in imds.requests()},
                         {("PUT", "/latest/api/token")}, "no token, no further request")
        self.assertEqual(self.proxy.requests(), [])

        env["AWS_EC2_METADATA_V1_DISABLED"] = "false"
        since = time.time()
        self.run_jobs(env)
        self.assert_signed_with(imds.issued)
        gets = [r for r in imds.requests() if r.at >= since and r.method == "GET"]
        self.per_process([r.path for r in gets], [ROLE_PATH, ROLE_PATH + imds.role])
        for r in gets:
            self.assertNotIn("x-aws-ec2-metadata-token", r.headers)

    def test_container_full_uri_with_token_file(self):
        token = "Bearer " + fakeaws.random_token()
        container = self.fake(fakeaws.Container(self.ledger, token=token))
        token_file = self.write("ecs-token", token + "\n")
        self.secrets.append(token)
        self.run_jobs(self.isolated_env(
            AWS_CONTAINER_CREDENTIALS_FULL_URI=container.url + container.path,
            AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE=token_file,
            AWS_CONTAINER_AUTHORIZATION_TOKEN="the-file-wins-over-this"))
        self.assert_signed_with(container.issued)
        reqs = container.requests()
        self.per_process([(r.method, r.path, r.status) for r in reqs],
                         [("GET", container.path, 200)])
        self.assertEqual({r.headers.get("authorization") for r in reqs}, {token})

    def test_container_token_from_variable(self):
        container = self.fake(fakeaws.Container(self.ledger, token="tok-from-env"))
        self.run_jobs(self.isolated_env(
            AWS_CONTAINER_CREDENTIALS_FULL_URI=container.url + container.path,
            AWS_CONTAINER_AUTHORIZATION_TOKEN="tok-from-env"))
        self.assert_signed_with(container.issued)
        self.per_process([r.headers.get("authorization") for r in container.requests()],
                         ["tok-from-env"])

    def test_web_identity(self):
        jwt = "eyJhbGciOiJSUzI1NiJ9." + fakeaws.random_token(200) + ".sig+/="
        role = "arn:aws:iam::123456789012:role/twice-irsa"
        sts = self.fake(fakeaws.Sts(self.ledger, role, jwt))
        token_file = self.write("web-identity-token", jwt)
        self.secrets.append(jwt)
        self.run_jobs(self.isolated_env(AWS_WEB_IDENTITY_TOKEN_FILE=token_file,
                                        AWS_ROLE_ARN=role,
                                        AWS_ROLE_SESSION_NAME="twice-worker@test",
                                        AWS_ENDPOINT_URL_STS=sts.url))
        self.assert_signed_with(sts.issued)
        reqs = sts.requests()
        self.per_process([(r.method, r.path, r.status) for r in reqs], [("POST", "/", 200)])
        self.assertEqual(reqs[0].form(), {
            "Action": "AssumeRoleWithWebIdentity", "Version": "2011-06-15", "RoleArn": role,
            "RoleSessionName": "twice-worker@test", "WebIdentityToken": jwt})
        self.assertTrue(reqs[0].headers["content-type"].startswith(
            "application/x-www-form-urlencoded"))
        self.assertNotIn("authorization", reqs[0].headers, "AssumeRoleWithWebIdentity is "
                                                           "unsigned")

    def test_web_identity_from_profile(self):
        jwt = "eyJ." + fakeaws.random_token(60) + ".x"
        role = "arn:aws:iam::123456789012:role/from-profile"
        sts = self.fake(fakeaws.Sts(self.ledger, role, jwt))
        token_file = self.write("jwt", jwt)
        config = self.write("config", "[profile irsa]\nweb_identity_token_file = %s\n"
                                      "role_arn = %s\n" % (token_file, role))
        self.run_jobs(self.isolated_env(AWS_CONFIG_FILE=config, AWS_PROFILE="irsa",
                                        AWS_ENDPOINT_URL_STS=sts.url))
        self.assert_signed_with(sts.issued)
        form = sts.requests()[0].form()
        self.assertEqual(form["RoleArn"], role)
        self.assertTrue(re.fullmatch(r"twice-session-\d+", form["RoleSessionName"]),
                        form["RoleSessionName"])

    def test_sts_answer_without_a_body_says_so(self):
        """An STS error with an empty body reads "HTTP 429 (empty body)", not a made-up
        reason or a line ending in ": "."""
        jwt = "eyJ." + fakeaws.random_token(60) + ".x"
        role = "arn:aws:iam::123456789012:role/throttled"
        sts = self.fake(fakeaws.Sts(self.ledger, role, jwt))
        sts.fail_next(1000, status=429)
        d = self.start_twiced(self.conf, extra_env=self.isolated_env(
            AWS_WEB_IDENTITY_TOKEN_FILE=self.write("jwt", jwt), AWS_ROLE_ARN=role,
            AWS_ENDPOINT_URL_STS=sts.url))
        d.wait_log(r"AssumeRoleWithWebIdentity: HTTP 429 \(empty body\)", timeout=20)
        self.assertEqual(d.stop(), 0)
        self.assertNotRegex(d.log_text(), r"HTTP 429: ")

    def test_credential_process(self):
        creds = self.ledger.issue("process", 3600)
        runs = os.path.join(self.tmp, "runs")
        doc = {"Version": 1, "AccessKeyId": creds.access_key_id,
               "SecretAccessKey": creds.secret_access_key, "SessionToken": creds.token,
               "Expiration": creds.expiration_text()}
        script = self.write("cred-helper.py",
                            "import sys\nopen(%r, 'a').write('run\\n')\n"
                            "sys.stderr.write('helper: token %s\\n')\n"
                            "print(%r)\n" % (runs, creds.token, json.dumps(doc)), 0o700)
        config = self.write("config", "[profile helper]\ncredential_process = %s %s\n"
                                      % (sys.executable, script))
        self.run_jobs(self.isolated_env(AWS_CONFIG_FILE=config, AWS_PROFILE="helper"))
        self.assert_signed_with([creds])
        with open(runs) as f:
            self.per_process(f.read().splitlines(), ["run"])  # an hour's credentials

    def test_credential_process_failure_shows_its_stderr_never_its_stdout(self):
        """A failing credential_process said "73 bytes on stderr, not shown", hiding
        hints such as "run aws sso login". The end of its stderr is shown, escaped;
        what it printed on stdout (where secrets go) never is."""
        secret = "stdout-secret-" + fakeaws.random_token(20)
        script = self.write("failing-helper.sh",
                            "#!/bin/sh\n"
                            "printf '{\"Version\": 1, \"SecretAccessKey\": \"%s\"}\\n'\n"
                            "echo 'Error loading SSO Token: Token for helper does not exist' >&2\n"
                            "printf 'run: aws sso login --profile helper\\033[0m\\n' >&2\n"
                            "exit 1\n" % secret, 0o700)
        config = self.write("config", "[profile helper]\ncredential_process = %s\n" % script)
        self.secrets.append(secret)
        d = self.start_twiced(self.conf, extra_env=self.isolated_env(AWS_CONFIG_FILE=config,
                                                                     AWS_PROFILE="helper"))
        d.wait_log(r"not ready: ", timeout=20)  # no credentials: never ready
        d.wait_log(re.escape("AWS credentials: profile helper: credential_process exited with "
                             "status 1; stderr: Error loading SSO Token: Token for helper does "
                             "not exist\\nrun: aws sso login --profile helper\\x1b[0m"),
                   timeout=20)
        self.assertEqual(d.stop(), 0)
        self.assert_no_secrets(d)
        self.assertEqual(self.proxy.requests(), [], "nothing was signed")

    def test_shared_credentials_file_rotated_on_disk(self):
        # A session set in the credentials file, as a rotating helper writes it: the
        # file says nothing of its expiry. The helper writes a new set and the old one
        # expires (AWS answers ExpiredToken): twiced must read the file again, not
        # fail every request until someone restarts it.
        creds = self.ledger.add("ASIAFILE0123456789AB", "file/secret+key", token="tok/1+=")
        text = ("[default]\naws_access_key_id = %s\naws_secret_access_key = %s\n"
                "aws_session_token = %s\n")
        path = self.write("credentials", text % (creds.access_key_id,
                                                 creds.secret_access_key, creds.token))
        d = self.start_twiced(self.conf, extra_env=self.isolated_env(
            AWS_SHARED_CREDENTIALS_FILE=path))
        d.wait_log(r"ready: generation 1", timeout=20)
        self.sqs.send(self.url, json.dumps({"id": "before"}))
        twicetest.wait_until(lambda: len(self.effects()) == 1, timeout=30,
                             message="twiced did not process the first message")
        rotated = self.ledger.add("ASIAFILE1ROTATED9ABC", "rotated/secret+key", token="tok/2")
        self.write("credentials", text % (rotated.access_key_id,
                                          rotated.secret_access_key, rotated.token))
        creds.expiration = time.time()  # AWS refuses the old set from now on
        mark = d.mark()
        for i in range(3):
            self.sqs.send(self.url, json.dumps({"id": "after-%d" % i}))
        # The refusal asks for a new read of the file no sooner than 10 s after the
        # set was read; receives back off 1, 2, 4, 8 s: well within 40 s.
        twicetest.wait_until(lambda: len(self.effects()) == 4, timeout=40,
                             message="twiced kept the refused credentials")
        twicetest.wait_until(lambda: self.sqs.counts(self.url) == (0, 0, 0), timeout=30)
        self.assertEqual(d.stop(), 0)
        self.assert_no_secrets(d)
        self.assertRegex(d.log_text()[mark:], r"ExpiredToken.*the AWS credentials expired")
        reqs = [r for r in self.proxy.passed() if r.access_key_id == rotated.access_key_id]
        self.assertTrue({"ReceiveMessage", "DeleteMessageBatch"} <= {r.target for r in reqs},
                        "the rotated set was not used: %s" % {r.target for r in reqs})
        refused = self.proxy.refused()
        self.assertTrue(refused, "the old set was never refused")
        self.assertEqual({r.access_key_id for r in refused}, {creds.access_key_id})
        self.assertLess(len(refused), 20, "twiced hammered SQS with refused credentials")


class Chain(CredsTest):
    def test_order_env_webid_profile_container_imds(self):
        """All five sources configured; taking away the winner each time hands over to
        the next, and the sources after the winner are never asked."""
        env_creds = self.ledger.add(twicetest.TEST_ACCESS_KEY_ID,
                                    twicetest.TEST_SECRET_ACCESS_KEY)
        jwt, role = "eyJ." + fakeaws.random_token() + ".s", "arn:aws:iam::1:role/w"
        sts = self.fake(fakeaws.Sts(self.ledger, role, jwt))
        imds = self.fake(fakeaws.Imds(self.ledger))
        container = self.fake(fakeaws.Container(self.ledger))
        file_creds = self.ledger.add("AKIDPROFILE000000000", "profile-secret")
        env = self.isolated_env(
            AWS_ACCESS_KEY_ID=env_creds.access_key_id,
            AWS_SECRET_ACCESS_KEY=env_creds.secret_access_key,
            AWS_WEB_IDENTITY_TOKEN_FILE=self.write("jwt", jwt), AWS_ROLE_ARN=role,
            AWS_ENDPOINT_URL_STS=sts.url,
            AWS_SHARED_CREDENTIALS_FILE=self.write(
                "credentials", "[default]\naws_access_key_id = %s\naws_secret_access_key = %s\n"
                % (file_creds.access_key_id, file_creds.secret_access_key)),
            AWS_CONTAINER_CREDENTIALS_FULL_URI=container.url + container.path,
            AWS_EC2_METADATA_DISABLED=None, AWS_EC2_METADATA_SERVICE_ENDPOINT=imds.url)
        fakes = [sts, container, imds]
        steps = [("env", lambda: [env_creds], ["AWS_ACCESS_KEY_ID"], 0),
                 ("web-identity", lambda: sts.issued, ["AWS_WEB_IDENTITY_TOKEN_FILE"], 1),
                 ("profile", lambda: [file_creds], ["AWS_SHARED_CREDENTIALS_FILE"], 0),
                 ("container", lambda: container.issued, ["AWS_CONTAINER_CREDENTIALS_FULL_URI"],
                  2),
                 ("imds", lambda: imds.issued, [], 3)]
        for name, creds, remove, asked in steps:
            since = time.time()
            self.run_jobs(env, count=1, prefix=name)
            self.assert_signed_with(creds(), since)
            asked_now = [len([r for r in f.requests() if r.at >= since]) > 0 for f in fakes]
            self.assertEqual(asked_now, [i == asked - 1 for i in range(3)],
                             "step %s: which fakes were asked" % name)
            for var in remove:
                env[var] = None

    def test_configured_source_that_fails_stops_the_chain(self):
        imds = self.fake(fakeaws.Imds(self.ledger))
        container = self.fake(fakeaws.Container(self.ledger))
        container.fail_next(1000, status=500)
        d = self.start_twiced(self.conf, extra_env=self.isolated_env(
            AWS_CONTAINER_CREDENTIALS_FULL_URI=container.url + container.path,
            AWS_EC2_METADATA_DISABLED=None, AWS_EC2_METADATA_SERVICE_ENDPOINT=imds.url))
        d.wait_log(r"not ready: ", timeout=20)  # no credentials: never ready
        d.wait_log(r"AWS credentials: container: container endpoint http://127\.0\.0\.1:%d: "
                   r"HTTP 500" % container.port, timeout=20)
        self.assertEqual(d.stop(), 0)
        self.assertGreaterEqual(len(container.requests()), 3, "three tries per attempt")
        self.assertEqual(imds.requests(), [], "no fallback to the instance's role")
        self.assertEqual(self.proxy.requests(), [])


class AssumeRole(CredsTest):
    """Assume-role profiles: role_arn with source_profile or credential_source, through a
    fake STS that checks each AssumeRole is signed (SigV4, service sts) with the source's
    credentials and trusted by the role."""

    TOP = "arn:aws:iam::222222222222:role/twice-top"
    MID = "arn:aws:iam::111111111111:role/twice-mid"

    def profiles(self, base, config):
        """The credentials file with [base] holding base's keys, and config; returns the
        environment for them."""
        cred = self.write("credentials", "[base]\naws_access_key_id = %s\n"
                                         "aws_secret_access_key = %s\n"
                          % (base.access_key_id, base.secret_access_key))
        return dict(AWS_SHARED_CREDENTIALS_FILE=cred, AWS_CONFIG_FILE=self.write("config",
                                                                                 config))

    def whoami(self, env):
        d = self.twiced(self.conf)
        full = dict(os.environ)
        for k, v in self.isolated_env(**env).items():
            if v is None:
                full.pop(k, None)
            else:
                full[k] = v
        return subprocess.run([self.env.binary("twicectl"), "-c", d.config_path, "--json",
                               "whoami"], capture_output=True, text=True, env=full, timeout=60)

    def test_chained_profiles(self):
        """top's source is mid, whose source is base's keys: base signs AssumeRole of
        mid, mid's credentials sign AssumeRole of top, top's sign every SQS request."""
        base = self.ledger.add("AKIDBASE000000000001", "base-secret/key+1")
        sts = self.fake(fakeaws.Sts(self.ledger, roles={self.MID: base.access_key_id,
                                                        self.TOP: "role:" + self.MID}))
        env = self.profiles(base, "[profile mid]\nrole_arn = %s\nsource_profile = base\n"
                                  "[profile top]\nrole_arn = %s\nsource_profile = mid\n"
                                  "role_session_name = twice-top\nexternal_id = ext-123\n"
                                  "duration_seconds = 1800\n" % (self.MID, self.TOP))
        env.update(AWS_PROFILE="top", AWS_ENDPOINT_URL_STS=sts.url)
        self.run_jobs(self.isolated_env(**env))
        top = [c for arn, _, _, c in sts.assumed if arn == self.TOP]
        self.assert_signed_with(top)
        self.assertEqual([r.note for r in sts.requests()], [None] * len(sts.requests()))
        mid_ids = {c.access_key_id for arn, _, _, c in sts.assumed if arn == self.MID}
        k = self.per_process([(arn, akid if akid == base.access_key_id else "mid")
                              for arn, akid, _, _ in sts.assumed],
                             [(self.MID, base.access_key_id), (self.TOP, "mid")])
        for arn, akid, form, _ in sts.assumed:
            if arn == self.TOP:
                self.assertIn(akid, mid_ids, "top is assumed with mid's credentials")
                self.assertEqual((form["RoleSessionName"], form["ExternalId"],
                                  form["DurationSeconds"]), ("twice-top", "ext-123", "1800"))
            else:
                self.assertRegex(form["RoleSessionName"], r"^twice-session-\d+$")
                self.assertNotIn("ExternalId", form)
        self.assertEqual(len(top), k)
        r = self.whoami(env)
        self.assertEqual(r.returncode, 0, r.stderr)
        who = json.loads(r.stdout)
        self.assertEqual(who["provider"], "assume-role:top")
        self.assertIn(who["access_key_id_last4"][-4:],
                      {c.access_key_id[-4:] for arn, _, _, c in sts.assumed if arn == self.TOP})

    def test_credential_source_environment_and_instance_metadata(self):
        """credential_source: the environment's keys, then the instance's role, sign the
        AssumeRole; the keys in the environment are not used as the identity."""
        keys = self.ledger.add("AKIDENVIRONMENT00001", "env-secret")
        imds = self.fake(fakeaws.Imds(self.ledger))
        sts = self.fake(fakeaws.Sts(self.ledger, roles={self.TOP: keys.access_key_id,
                                                        self.MID: "imds"}))
        config = self.write("config", "[profile ci]\nrole_arn = %s\n"
                                      "credential_source = Environment\n"
                                      "[profile ec2]\nrole_arn = %s\n"
                                      "credential_source = Ec2InstanceMetadata\n"
                            % (self.TOP, self.MID))
        self.run_jobs(self.isolated_env(AWS_CONFIG_FILE=config, AWS_PROFILE="ci",
                                        AWS_ENDPOINT_URL_STS=sts.url,
                                        AWS_ACCESS_KEY_ID=keys.access_key_id,
                                        AWS_SECRET_ACCESS_KEY=keys.secret_access_key),
                      prefix="env")
        self.assert_signed_with([c for arn, _, _, c in sts.assumed if arn == self.TOP])
        since = time.time()
        self.run_jobs(self.isolated_env(AWS_CONFIG_FILE=config, AWS_PROFILE="ec2",
                                        AWS_ENDPOINT_URL_STS=sts.url,
                                        AWS_EC2_METADATA_DISABLED=None,
                                        AWS_EC2_METADATA_SERVICE_ENDPOINT=imds.url),
                      prefix="ec2")
        self.assert_signed_with([c for arn, _, _, c in sts.assumed if arn == self.MID], since)
        self.assertTrue(imds.issued)
        self.assertEqual([r.note for r in sts.requests()], [None] * len(sts.requests()))

    def test_refused_profiles_say_why(self):
        """A source_profile loop is refused at once (not an infinite loop), as are
        mfa_serial and SSO profiles, with what to do; STS is never asked."""
        sts = self.fake(fakeaws.Sts(self.ledger, roles={}))
        cases = [
            ("[profile a]\nrole_arn = %s\nsource_profile = b\n"
             "[profile b]\nrole_arn = %s\nsource_profile = a\n" % (self.TOP, self.MID), "a",
             "AWS credentials: profile a: source_profile loops: a -> b -> a"),
            ("[profile m]\nrole_arn = %s\nsource_profile = base\nmfa_serial = arn:x\n"
             % self.TOP, "m", "[profile m] has mfa_serial: twice runs unattended"),
            ("[profile dev]\nsso_session = corp\nsso_account_id = 111111111111\n"
             "sso_role_name = Dev\n[sso-session corp]\nsso_start_url = https://corp.example"
             "\nsso_region = us-east-1\n", "dev",
             "[profile dev] is an IAM Identity Center (SSO) profile, which twice does not "
             "read: give twice a profile with credential_process = aws configure "
             "export-credentials --profile dev --format process"),
        ]
        base = self.ledger.add("AKIDBASE000000000002", "s")
        for config, profile, want in cases:
            env = self.profiles(base, config)
            env.update(AWS_PROFILE=profile, AWS_ENDPOINT_URL_STS=sts.url)
            start = time.monotonic()
            r = self.whoami(env)
            self.assertEqual(r.returncode, 1, r.stdout)
            self.assertIn(want, r.stderr)
            self.assertLess(time.monotonic() - start, 10)
            d = self.start_twiced(self.conf, extra_env=self.isolated_env(**env))
            d.wait_log(r"not ready: ", timeout=20)  # no credentials: never ready
            d.wait_log(re.escape(want), timeout=20)
            self.assertEqual(d.stop(), 0)
        self.assertEqual(sts.requests(), [])
        self.assertEqual(self.proxy.requests(), [])

    def test_refreshed_before_expiry(self):
        """The role's credentials last 24 s: they are refreshed (source keys, AssumeRole
        again) 20 s ahead of their expiry while messages flow; no request is refused."""
        base = self.ledger.add("AKIDBASE000000000003", "base-secret-3")
        sts = self.fake(fakeaws.Sts(self.ledger, roles={self.TOP: base.access_key_id},
                                    lifetimes={self.TOP: 24}))
        env = self.profiles(base, "[profile top]\nrole_arn = %s\nsource_profile = base\n"
                            % self.TOP)
        env.update(AWS_PROFILE="top", AWS_ENDPOINT_URL_STS=sts.url)
        d = self.start_twiced(self.conf, extra_env=self.isolated_env(**env))
        d.wait_log(r"ready: generation 1", timeout=20)
        twicetest.wait_until(lambda: sts.assumed, timeout=10)
        first = sts.assumed[0][3]
        sent = 0
        while time.time() < first.issued + 16:
            self.sqs.send(self.url, json.dumps({"id": "steady-%d" % sent}))
            sent += 1
            time.sleep(1)
        twicetest.wait_until(lambda: len(self.effects()) >= sent, timeout=30,
                             message="not every message was processed")
        self.assertEqual(d.stop(), 0)
        self.assert_no_secrets(d)
        issued = [c for _, _, _, c in sts.assumed]
        reqs = self.assert_signed_with(issued)
        self.assertEqual(self.proxy.refused(), [])
        times = sorted(c.issued - first.issued for c in issued)
        self.assertTrue(any(3 <= t <= 9 for t in times),
                        "refreshed about 4 s after the first (expiry at 24 s): %s" % times)
        used = {r.access_key_id for r in reqs}
        self.assertGreater(len(used), len({first.access_key_id}), "new credentials were used")
        self.assertNotIn("CredentialsError", d.log_text())


class Refresh(CredsTest):
    # The first set's lifetime, s: long enough for every process to fetch and for
    # messages to flow before the refresh, short enough to keep the test short.
    LIFETIME = 60

    def test_short_lived_refreshed_ahead_with_no_failed_request(self):
        """IMDS hands out credentials that expire in a minute (real sets can have
        minutes left; every lifetime under twice the 15-minute refresh window takes this
        path). twiced refreshes them at half-life (~30 s before expiry) in the
        background; the first refresh attempt fails (500) and is retried with backoff
        while the old ones stay in use. Messages flow all along, every request is signed
        with live credentials, none fails."""
        imds = self.fake(fakeaws.Imds(self.ledger, lifetimes=(self.LIFETIME, 6 * 3600)))
        # DLQ checks every 5 s: the monitor, too, signs requests all along.
        conf = self.conf + "alerts = { dlq_check_interval = 5; };\n"
        d = self.start_twiced(conf, extra_env=self.isolated_env(
            AWS_EC2_METADATA_DISABLED=None, AWS_EC2_METADATA_SERVICE_ENDPOINT=imds.url))
        d.wait_log(r"ready: generation 1", timeout=20)
        twicetest.wait_until(lambda: imds.issued, timeout=10)
        time.sleep(3)  # every process with credentials (worker, DLQ monitor) fetched by now
        first = imds.issued[0]
        imds.fail_next(1, status=500, path_prefix=ROLE_PATH + imds.role)
        sent = 0
        deadline = first.issued + self.LIFETIME / 2 + 10
        while time.time() < deadline:
            self.sqs.send(self.url, json.dumps({"id": "steady-%d" % sent}))
            sent += 1
            time.sleep(2)
        twicetest.wait_until(lambda: len(self.effects()) >= sent, timeout=30,
                             message="not every message was processed")
        self.assertEqual(d.stop(), 0)
        self.assert_no_secrets(d)

        # Each process with credentials (the worker, the master's DLQ monitor) fetched
        # once: only the first set is short-lived (the fake hands out 6-hour ones after
        # it), so exactly one refresh is due; the injected 500 hits it, a retry succeeds.
        fetches = imds.requests(ROLE_PATH + imds.role)
        statuses = [r.status for r in fetches]
        self.assertEqual(statuses.count(500), 1, statuses)
        failed = statuses.index(500)
        processes = failed
        self.assertIn(processes, (1, 2), statuses)
        self.assertEqual(statuses, [200] * processes + [500, 200], "first fetches come first")
        self.assertEqual(len(imds.issued), processes + 1)
        second = imds.issued[processes]
        failed_at = fetches[failed].at - first.issued
        refreshed_at = fetches[failed + 1].at - first.issued
        print("\nrefresh tried %.1f s after the first fetch, done at %.1f s (expiry at %d s)"
              % (failed_at, refreshed_at, self.LIFETIME), file=sys.stderr)
        self.assertTrue(self.LIFETIME / 2 - 5 <= failed_at <= self.LIFETIME / 2 + 5, failed_at)
        self.assertTrue(refreshed_at - failed_at < 10, "retried soon after the failure")
        reqs = self.assert_signed_with(imds.issued)
        # Whichever process got the 5-minute set (worker or DLQ monitor) switched.
        old = [r.at for r in reqs if r.access_key_id == first.access_key_id]
        new = [r.at for r in reqs if r.access_key_id == second.access_key_id]
        self.assertTrue(old and new)
        self.assertLess(min(new), first.expiration, "switched before the old ones expired")
        self.assertLess(max(old), min(new) + 1, "no request went back to the old ones")
        self.assertEqual(self.proxy.refused(), [])
        log = d.log_text()
        self.assertNotIn("CredentialsError", log)
        self.assertIsNone(re.search(r"(?i)credentials.*(expired|fail)", log), log[-2000:])


if __name__ == "__main__":
    unittest.main()
