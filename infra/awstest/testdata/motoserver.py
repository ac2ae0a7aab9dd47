"""moto_server for the AWS path test, with Step Functions' Lambda calls sent to
the Lambda runtime interface emulators.

Usage: python3 motoserver.py --port PORT --lambdas FILE

FILE is a JSON object mapping a function name (the last part of its ARN,
e.g. "countersign-notify") to the base URL of the emulator running it
(e.g. "http://127.0.0.1:41234"). It is re-read on every invocation, so the
test may restart an emulator on another port.

moto's Step Functions interpreter (stepfunctions.execute_state_machine)
invokes a Task state's function through a boto3 Lambda client pointed at
moto itself, whose Lambda runs functions in Docker. This launcher replaces,
in the one module that makes those calls (lambda_eval_utils: both
arn:aws:states:::lambda:invoke[.waitForTaskToken] and plain function ARNs),
the client factory by one whose invoke() POSTs the payload to
<emulator>/2015-03-31/functions/function/invocations and answers as the
Lambda Invoke API does:

- a function error comes back from the emulator as HTTP 200 with the body
  {"errorMessage": ..., "errorType": ...} (and no X-Amz-Function-Error
  header), so such a body, or any non-200 answer, is reported as
  FunctionError "Unhandled", the body as payload; Step Functions then names
  the error by errorType, as on AWS;
- an emulator that cannot be reached, or that is still busy with another
  invocation (it runs one at a time and answers 400), is a Lambda service
  error (Lambda.ServiceException, Lambda.TooManyRequestsException), which
  the state machines' Retry covers;
- a function that is not in FILE is Lambda.ResourceNotFoundException.

Every other service (SNS, S3, Secrets Manager, Step Functions itself) is
plain moto. The server binds 127.0.0.1 only.
"""

import argparse
import io
import json
import os
import sys
import urllib.error
import urllib.request

from botocore.exceptions import ClientError

from moto.stepfunctions.parser.asl.component.state.exec.state_task import (
    lambda_eval_utils,
)

_INVOKE_PATH = "/2015-03-31/functions/function/invocations"
# Loopback only: never through a proxy from the environment.
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))
_LAMBDAS_FILE = None


def _lambda_error(code, message, status):
    return ClientError(
        {
            "Error": {"Code": code, "Message": message},
            "ResponseMetadata": {"HTTPStatusCode": status, "RequestId": "awstest"},
        },
        "Invoke",
    )


class EmulatorLambdaClient:
    """The subset of a boto3 Lambda client that lambda_eval_utils calls."""

    def invoke(self, FunctionName, Payload=b"{}", **_ignored):
        name = FunctionName.rsplit(":function:", 1)[-1].split(":", 1)[0]
        with open(_LAMBDAS_FILE, encoding="utf-8") as f:
            emulators = json.load(f)
        base = emulators.get(name)
        if base is None:
            raise _lambda_error(
                "ResourceNotFoundException",
                f"Function not found: {FunctionName} (emulated: {sorted(emulators)})",
                404,
            )
        if isinstance(Payload, str):
            Payload = Payload.encode("utf-8")
        req = urllib.request.Request(
            base + _INVOKE_PATH,
            data=Payload or b"{}",
            method="POST",
            headers={"Content-Type": "application/json"},
        )
        try:
            with _OPENER.open(req, timeout=960) as resp:
                status, body = resp.status, resp.read()
        except urllib.error.HTTPError as e:
            status, body = e.code, e.read()
        except (urllib.error.URLError, OSError) as e:
            raise _lambda_error("ServiceException", f"{name}: emulator unreachable: {e}", 502)
        if status == 400:
            raise _lambda_error("TooManyRequestsException", f"{name}: emulator busy", 429)
        out = {"StatusCode": 200, "ExecutedVersion": "$LATEST", "Payload": io.BytesIO(body)}
        if status != 200 or _is_error(body):
            out["FunctionError"] = "Unhandled"
            if not _is_error(body):
                out["Payload"] = io.BytesIO(
                    json.dumps(
                        {
                            "errorType": "Runtime.ExitError",
                            "errorMessage": f"emulator answered HTTP {status}: {body[:500]!r}",
                        }
                    ).encode()
                )
        return out


def _is_error(body):
    try:
        v = json.loads(body)
    except ValueError:
        return False
    return isinstance(v, dict) and "errorType" in v and "errorMessage" in v


_real_boto_client_for = lambda_eval_utils.boto_client_for


def _boto_client_for(region, service, state_credentials=None):
    if service == "lambda":
        return EmulatorLambdaClient()
    return _real_boto_client_for(region=region, service=service, state_credentials=state_credentials)


def main():
    global _LAMBDAS_FILE
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--lambdas", required=True)
    args = p.parse_args()
    _LAMBDAS_FILE = args.lambdas
    lambda_eval_utils.boto_client_for = _boto_client_for
    os.environ["MOTO_PORT"] = str(args.port)
    from moto import server

    print(f"awstest moto_server on 127.0.0.1:{args.port}", file=sys.stderr, flush=True)
    server.main(["--host", "127.0.0.1", "--port", str(args.port)])


if __name__ == "__main__":
    main()
