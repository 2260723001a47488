"""Compile a ~10 MB KFP v2 pipeline (the large_300 source with more shards) without
scheduling, for the throughput measurement."""
import importlib.util
import sys
import warnings
from pathlib import Path

source, shards, dst = sys.argv[1], int(sys.argv[2]), sys.argv[3]
sys.path.insert(0, str(Path(source).parent))
spec = importlib.util.spec_from_file_location("big", source)
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)
mod.SHARDS = shards
from kfp import compiler
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    compiler.Compiler().compile(mod.pipeline(False), dst)
