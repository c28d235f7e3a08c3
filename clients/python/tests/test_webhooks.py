"""The webhook helpers: against the Standard Webhooks specification's published
example, against signatures computed by the Node side (AUTHZ_TEST_WEBHOOK_VECTORS:
the service's own signer and node:crypto), and on a real delivery of the service."""
import base64
import json
import os
import unittest
from typing import Any, Dict

from agent_authz import (
    AuthzClient,
    AuthzError,
    WebhookVerificationError,
    sign_standard_webhook,
    sign_webhook_body,
    verify_standard_webhook,
    verify_webhook_signature,
)

from support import DENY, KEY, URL, Receiver, agent, api, env

VECTORS: Dict[str, Any] = json.loads(env("AUTHZ_TEST_WEBHOOK_VECTORS"))

# The reference vector of the Standard Webhooks libraries (github.com/standard-webhooks/standard-webhooks,
# the test "sign function works"; also the worked example of Svix's documentation).
PUBLISHED = {
    "secret": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
    "id": "msg_p5jXN8AQM9LWM0D4loKWxJek",
    "timestamp": 1614265330,
    "body": b'{"test": 2432232314}',
    "signature": "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
}


def headers(vector: Dict[str, Any], **override: str) -> Dict[str, str]:
    h = {"webhook-id": vector["id"], "webhook-timestamp": str(vector["timestamp"]), "webhook-signature": vector["signature"]}
    h.update(override)
    return h


class ServiceSignatureTest(unittest.TestCase):
    def setUp(self) -> None:
        v = VECTORS["service"]
        self.secret, self.body, self.header = v["secret"], base64.b64decode(v["body_base64"]), v["signature"]

    def test_the_node_signers_vector_verifies(self) -> None:
        verify_webhook_signature(self.secret, self.body, self.header)
        verify_webhook_signature(self.secret, bytearray(self.body), "  " + self.header.upper().replace("SHA256=", "sha256=") + " ")
        self.assertEqual(sign_webhook_body(self.secret, self.body), self.header)

    def test_mismatches_raise_signature_invalid(self) -> None:
        wrong = [
            (self.secret, self.body + b" ", self.header),
            (self.secret + "x", self.body, self.header),
            (self.secret, self.body, self.header[:-1] + ("0" if self.header[-1] != "0" else "1")),
            (self.secret, self.body, self.header.replace("sha256=", "sha1=")),
            (self.secret, self.body, self.header[len("sha256="):]),
            (self.secret, self.body, ""),
            (self.secret, self.body, None),
        ]
        for secret, body, header in wrong:
            with self.assertRaises(WebhookVerificationError) as caught:
                verify_webhook_signature(secret, body, header)
            self.assertEqual(caught.exception.code, "webhook.signature_invalid")
            self.assertIsInstance(caught.exception, AuthzError)

    def test_programming_errors_are_not_verification_errors(self) -> None:
        with self.assertRaises(ValueError):
            verify_webhook_signature("", self.body, self.header)
        with self.assertRaises(TypeError):
            verify_webhook_signature(self.secret, json.loads(self.body), self.header)  # type: ignore[arg-type]


class StandardWebhooksTest(unittest.TestCase):
    def test_the_published_example_verifies(self) -> None:
        p = PUBLISHED
        verify_standard_webhook(p["secret"], p["body"], headers(p), now=p["timestamp"])
        self.assertEqual(sign_standard_webhook(p["secret"], p["id"], p["timestamp"], p["body"]), p["signature"])

    def test_the_node_vector_verifies_with_any_header_case_and_several_signatures(self) -> None:
        v = VECTORS["standard"]
        body = base64.b64decode(v["body_base64"])
        verify_standard_webhook(v["secret"], body, headers(v), now=v["timestamp"])
        upper = {k.upper(): val for k, val in headers(v).items()}
        verify_standard_webhook(v["secret"], body, upper, now=v["timestamp"] + 10)
        rotated = headers(v, **{"webhook-signature": "v1,c29tZXRoaW5nIGVsc2U= " + v["signature"]})
        verify_standard_webhook(v["secret"], body, rotated, now=v["timestamp"])
        self.assertEqual(sign_standard_webhook(v["secret"], v["id"], v["timestamp"], body), v["signature"])

    def test_tolerance_window_default_300_seconds_both_ways(self) -> None:
        v = VECTORS["standard"]
        body, t = base64.b64decode(v["body_base64"]), v["timestamp"]
        for now in (t + 300, t - 300):
            verify_standard_webhook(v["secret"], body, headers(v), now=now)
        for now in (t + 301, t - 301):
            with self.assertRaises(WebhookVerificationError) as caught:
                verify_standard_webhook(v["secret"], body, headers(v), now=now)
            self.assertEqual(caught.exception.code, "webhook.timestamp_invalid")
        verify_standard_webhook(v["secret"], body, headers(v), tolerance_seconds=3600, now=t + 3000)

    def test_refusals(self) -> None:
        v = VECTORS["standard"]
        body, t = base64.b64decode(v["body_base64"]), v["timestamp"]
        cases = [
            (body + b"x", headers(v), "webhook.signature_invalid"),
            (body, headers(v, **{"webhook-id": "evt_other"}), "webhook.signature_invalid"),
            (body, headers(v, **{"webhook-signature": v["signature"].replace("v1,", "v2,")}), "webhook.signature_invalid"),
            (body, headers(v, **{"webhook-signature": ""}), "webhook.signature_invalid"),
            (body, headers(v, **{"webhook-timestamp": "soon"}), "webhook.timestamp_invalid"),
            (body, {k: val for k, val in headers(v).items() if k != "webhook-timestamp"}, "webhook.timestamp_invalid"),
            (body, {k: val for k, val in headers(v).items() if k != "webhook-id"}, "webhook.headers_missing"),
        ]
        for raw, h, code in cases:
            with self.assertRaises(WebhookVerificationError, msg=code) as caught:
                verify_standard_webhook(v["secret"], raw, h, now=t)
            self.assertEqual(caught.exception.code, code)
        other_secret = "whsec_" + base64.b64encode(os.urandom(24)).decode()
        with self.assertRaises(WebhookVerificationError):
            verify_standard_webhook(other_secret, body, headers(v), now=t)
        with self.assertRaises(ValueError):
            verify_standard_webhook("whsec_not base64!", body, headers(v), now=t)


class DeliveryTest(unittest.TestCase):
    """A real delivery of the service (its dispatcher runs) verifies with the endpoint's secret."""

    def test_a_delivery_verifies_and_a_tampered_one_does_not(self) -> None:
        with Receiver() as receiver:
            status, endpoint = api("POST", "/v1/webhooks", {"url": receiver.url, "events": ["decision.deny"]})
            self.assertEqual(status, 201, endpoint)
            try:
                d = AuthzClient(base_url=URL, api_key=KEY).decide(agent_id=agent("hook"), action=DENY)
                got, raw = receiver.wait_for(lambda e: e["data"]["decision"]["id"] == d["id"])
            finally:
                api("DELETE", f"/v1/webhooks/{endpoint['id']}")
        signature = next(v for k, v in got.items() if k.lower() == "x-service-signature")
        verify_webhook_signature(endpoint["secret"], raw, signature)
        self.assertEqual(json.loads(raw)["type"], "decision.deny")
        with self.assertRaises(WebhookVerificationError):
            verify_webhook_signature(endpoint["secret"], raw.replace(b"decision.deny", b"decision.allow"), signature)


if __name__ == "__main__":
    unittest.main()
