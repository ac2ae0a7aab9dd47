"""Reads a SAM template as the AWS path test needs it.

Usage: python3 template.py TEMPLATE

Decodes TEMPLATE with cfn-lint's decoder (YAML with the CloudFormation short
tags: !Ref, !GetAtt, !Sub ... become their long forms {"Ref": ...},
{"Fn::GetAtt": [...]}, {"Fn::Sub": ...}), expands it with
aws-sam-translator as `sam deploy` would (local CodeUri and DefinitionUri
replaced by S3 URIs, as `sam package` would, and cfn-lint's copy of the
managed policy map), and prints one JSON object:

    {"template": <the decoded template>, "transformed": <the expanded one>}

Exits 1 with the decoder's or the translator's messages on stderr when
either fails.
"""

import copy
import json
import os
import sys

from cfnlint.data import Serverless
from cfnlint.decode import decode
from cfnlint.helpers import load_resource
from samtranslator.parser import parser
from samtranslator.public.exceptions import InvalidDocumentException
from samtranslator.translator.translator import Translator


def main():
    path = sys.argv[1]
    template, matches = decode(path)
    if matches or template is None:
        for m in matches or []:
            print(f"{path}: {m}", file=sys.stderr)
        sys.exit(1)

    sam = copy.deepcopy(template)
    for name, res in sam.get("Resources", {}).items():
        props = res.get("Properties") or {}
        kind = res.get("Type")
        if kind == "AWS::Serverless::Function" and isinstance(props.get("CodeUri"), str):
            props["CodeUri"] = f"s3://awstest-artifacts/{name}.zip"
        if kind == "AWS::Serverless::StateMachine" and isinstance(props.get("DefinitionUri"), str):
            props["DefinitionUri"] = f"s3://awstest-artifacts/{name}.asl.json"

    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    translator = Translator(
        managed_policy_map=load_resource(Serverless, "ManagedPolicies.json"),
        sam_parser=parser.Parser(),
    )
    try:
        transformed = translator.translate(sam_template=sam, parameter_values={})
    except InvalidDocumentException as e:
        for cause in e.causes:
            print(f"{path}: SAM transform: {cause.message}", file=sys.stderr)
        sys.exit(1)

    json.dump({"template": template, "transformed": transformed}, sys.stdout, default=str)


if __name__ == "__main__":
    main()
