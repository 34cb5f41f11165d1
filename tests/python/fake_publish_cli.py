#!/usr/bin/env python3
"""Stand-in for the real publishing CLI, used by the `publishing` tool tests.

The coremcp `publishing` plugin runs the program named by COREMCP_PUBLISH_CMD
and expects a JSON document on stdout. This fake lets the tests observe
exactly which arguments arrived and exercise the plugin's failure paths:

* first argument `fail`: writes "boom on stderr" to stderr and exits 3;
* first argument `text`: prints a non-JSON line and exits 0;
* anything else: prints {"argv": [...its arguments...], "cwd": "..."} and exits 0.

Standard library only, so any `python3` on PATH can run it.
"""

import json
import os
import sys


def main(argv: list[str]) -> int:
    if argv[:1] == ["fail"]:
        print("boom on stderr", file=sys.stderr)
        return 3
    if argv[:1] == ["text"]:
        print("not json at all")
        return 0
    print(json.dumps({"argv": argv, "cwd": os.getcwd()}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
