"""Start-up: `gradgen --version`, `--help` and `status` against `python -c "import numpy"`.

Each command is run as a user runs it (a fresh process, the installed console script),
interleaved, and the median wall time of each is printed with its ratio to importing NumPy.
The target (issue 13) is at most 1.5x for --version and --help; `import gradgen` imports
neither sympy nor black nor NumPy, and only the command that needs them does.

Run on demand, not in CI:  python benchmarks/startup.py [rounds]
"""

import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def gradgen_command():
    """The console script beside this Python (not a version manager's shim), else `-m gradgen`."""
    script = Path(sys.executable).with_name("gradgen")
    if script.exists():
        return [str(script)]
    found = shutil.which("gradgen")
    return [found] if found else [sys.executable, "-m", "gradgen"]


def main(rounds=21):
    gradgen = gradgen_command()
    commands = {
        'python -c "import numpy"': [sys.executable, "-c", "import numpy"],
        "gradgen --version": gradgen + ["--version"],
        "gradgen --help": gradgen + ["--help"],
        "gradgen status": gradgen + ["status"],
    }
    times = {name: [] for name in commands}
    for _ in range(rounds):
        for name, argv in commands.items():
            start = time.perf_counter()
            subprocess.run(argv, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
            times[name].append(time.perf_counter() - start)
    base = statistics.median(times['python -c "import numpy"'])
    print(f"median of {rounds} interleaved runs each")
    for name, ts in times.items():
        print(f"  {name:<28} {statistics.median(ts) * 1000:7.1f} ms  {statistics.median(ts) / base:5.2f}x numpy")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 21)
