"""fakeaws: small local servers that play the AWS endpoints twice takes credentials from
(EC2 instance metadata IMDSv2, the ECS/EKS container credentials endpoint, STS
AssumeRoleWithWebIdentity) and a recording SQS proxy that checks every request's SigV4
signature before passing it on to the SQS emulator.

What it is for: test_creds.py and test_fifo.py, which assert the exact requests twice
makes. Each server follows the documented wire format (paths, headers, JSON and XML
documents), records every request, and can be scripted to fail. What it is not: a mock
of what the tests assert on (SQS behaviour comes from the real emulator), or a server for
anything but 127.0.0.1.

    ledger = fakeaws.Ledger()                  # credentials handed out, by key id
    with fakeaws.Imds(ledger) as imds, fakeaws.SqsProxy(ledger, upstream) as proxy:
        ... twiced with AWS_EC2_METADATA_SERVICE_ENDPOINT=imds.url, aws.endpoint=proxy.url
        imds.requests()                        # what twiced asked
        proxy.requests()                       # every SQS call, with its verdict

Stdlib only (and twicetest.sigv4_sign).
"""

from .base import Ledger, RecordingServer, Request, iso_time, random_token
from .container import Container
from .imds import Imds
from .sqsproxy import SqsProxy
from .sts import Sts

__all__ = ["Container", "Imds", "Ledger", "RecordingServer", "Request", "SqsProxy", "Sts",
           "iso_time", "random_token"]
