"""Recompile a fixture pipeline with its SDK's own scheduling calls: what users run today."""
import importlib.util
import sys
import warnings

sdk, source, dst = sys.argv[1], sys.argv[2], sys.argv[3]
spec = importlib.util.spec_from_file_location("pipeline_source", source)
mod = importlib.util.module_from_spec(spec)
sys.path.insert(0, str(__import__("pathlib").Path(source).parent))
spec.loader.exec_module(mod)
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    if sdk == "v2":
        from kfp import compiler
        compiler.Compiler().compile(mod.pipeline(True), dst)
    else:
        import kfp
        kfp.compiler.Compiler().compile(mod.pipeline(True), dst)
