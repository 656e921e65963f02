"""What a job started by cohort.launch runs on its node: `python -m cohort._launched CALL`.

Reads the call, imports the function's module (or runs the script it was defined in under
another name, so that its `__main__` block does not run), calls it, and writes the outcome to
$COHORT_OUTPUT_DIR/cohort-launch/result.pickle: {"ok": True, "value": ...}, or {"ok": False,
"type", "traceback", "exception"}. Exits 0 when the function returned, 1 when it raised.
"""

from __future__ import annotations

import os
import pickle
import sys
import traceback
import types
from typing import Any, Dict

from ._launch import RESULT_PATH, SCRIPT_MODULE


def _load_script(path: str) -> None:
    module = types.ModuleType(SCRIPT_MODULE)
    module.__file__ = os.path.abspath(path)
    # Pickle finds the function as __main__.NAME (as the caller had it), and what the script
    # defines calls itself __cohort_main__ (so that its `if __name__ == "__main__"` is false).
    sys.modules[SCRIPT_MODULE] = module
    sys.modules["__main__"] = module
    sys.path.insert(0, os.path.dirname(module.__file__))
    with open(path, "rb") as f:
        source = f.read()
    exec(compile(source, module.__file__, "exec"), module.__dict__)


def main(argv: list) -> int:
    with open(argv[1], "rb") as f:
        envelope: Dict[str, Any] = pickle.load(f)
    out_dir = os.environ.get("COHORT_OUTPUT_DIR", ".")
    result_path = os.path.join(out_dir, RESULT_PATH)
    os.makedirs(os.path.dirname(result_path), exist_ok=True)
    # Outputs from the start: a job whose process dies before it writes its result still has an
    # upload, which tells the caller there is no result rather than keep it waiting.
    with open(os.path.join(os.path.dirname(result_path), "started"), "w") as f:
        f.write(f"{os.getpid()}\n")
    try:
        if envelope["script"]:
            _load_script(envelope["script"])
        fn, args, kwargs = pickle.loads(envelope["call"])
        value = fn(*args, **kwargs)
        outcome = pickle.dumps({"ok": True, "value": value}, protocol=4)
        code = 0
    except BaseException as e:  # noqa: BLE001: the caller gets whatever it was
        try:
            exception = pickle.dumps(e, protocol=4)
        except Exception:  # noqa: BLE001: not every exception pickles
            exception = None
        text = traceback.format_exc()
        sys.stderr.write(text)
        outcome = pickle.dumps({"ok": False, "type": type(e).__qualname__, "traceback": text,
                                "exception": exception}, protocol=4)
        code = 1
    with open(result_path + ".part", "wb") as f:
        f.write(outcome)
    os.replace(result_path + ".part", result_path)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv))
