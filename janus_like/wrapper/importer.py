"""Compile a script, and the modules it imports from its own directory, with hotness prologues.

Input: a source file. Output: a code object (for the script) or a module (through an import hook
on `sys.meta_path`) whose top-level functions and methods report to a `Runtime`.
"""
from __future__ import annotations

import ast
import importlib.machinery
import importlib.util
import os
import sys

from .rewrite import RT, rewrite_module


def compile_rewritten(source: str, filename: str, module: str, rt, include, exclude):
    tree = ast.parse(source, filename)
    rewrite_module(tree, filename, module, rt.new_site, include, exclude)
    rt.sources[filename] = source
    return compile(tree, filename, "exec", dont_inherit=True)


class _RewritingLoader(importlib.machinery.SourceFileLoader):
    def __init__(self, fullname, path, hook):
        super().__init__(fullname, path)
        self.hook = hook

    def get_code(self, fullname):  # never a cached .pyc: it would not carry the prologues
        path = self.get_filename(fullname)
        source = importlib.util.decode_source(self.get_data(path))
        return compile_rewritten(source, path, fullname, self.hook.rt, self.hook.include, self.hook.exclude)

    def exec_module(self, module):
        module.__dict__[RT] = self.hook.rt
        self.hook.loaded.append(module.__name__)
        super().exec_module(module)


class ImportHook:
    """A `sys.meta_path` finder for .py modules under `root` (the script's directory)."""

    def __init__(self, root, rt, include, exclude):
        self.root = os.path.realpath(root) + os.sep
        self.rt, self.include, self.exclude = rt, include, exclude
        self.loaded: list = []

    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("janus_like", "benchmarks") or name in sys.modules:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or not spec.origin or not spec.origin.endswith(".py"):
            return None
        origin = os.path.realpath(spec.origin)
        if not origin.startswith(self.root) or "site-packages" in origin:
            return None
        loader = _RewritingLoader(name, spec.origin, self)
        return importlib.util.spec_from_file_location(
            name, spec.origin, loader=loader, submodule_search_locations=spec.submodule_search_locations)

    def install(self):
        sys.meta_path.insert(0, self)

    def uninstall(self):
        if self in sys.meta_path:
            sys.meta_path.remove(self)
        for name in self.loaded:  # a later run gets fresh modules and fresh counters
            sys.modules.pop(name, None)
