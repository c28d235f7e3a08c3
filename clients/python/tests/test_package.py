"""The package's structure, read from its source (no server needed): no import
cycle among its modules (imports made only for the type checker included), and
one definition of the decision request behind ``decide`` and ``guard``."""
import ast
import inspect
import os
import tempfile
import unittest
from typing import Dict, List, Optional, Set

from agent_authz import AsyncAuthzClient, AuthzClient
from agent_authz._request import FIELDS, decision_request

PACKAGE_DIR = os.path.dirname(inspect.getfile(AuthzClient))


def import_graph(package_dir: str) -> Dict[str, Set[str]]:
    """Module name -> the package modules it imports, every ``import`` statement
    counted wherever it stands (``if TYPE_CHECKING:`` blocks and functions too)."""
    package = os.path.basename(package_dir)
    modules = {name[:-3] for name in os.listdir(package_dir) if name.endswith(".py")}
    graph: Dict[str, Set[str]] = {}
    for module in sorted(modules):
        with open(os.path.join(package_dir, f"{module}.py"), encoding="utf-8") as source:
            tree = ast.parse(source.read(), filename=f"{module}.py")
        targets: Set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                if node.level > 1:
                    raise AssertionError(f"{module}: an import from above the package ({'.' * node.level}{node.module or ''})")
                if node.level == 1:
                    base: Optional[str] = node.module
                elif node.module == package or (node.module or "").startswith(f"{package}."):
                    base = (node.module or "")[len(package) + 1 :] or None
                else:
                    continue
                if base is None:  # from . import x, y: modules (or names of __init__)
                    names = [alias.name for alias in node.names]
                    targets.update(name if name in modules else "__init__" for name in names)
                else:
                    targets.add(base.split(".")[0])
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name == package:
                        targets.add("__init__")
                    elif alias.name.startswith(f"{package}."):
                        targets.add(alias.name.split(".")[1])
        graph[module] = {target for target in targets if target != module}
    return graph


def find_cycle(graph: Dict[str, Set[str]]) -> Optional[List[str]]:
    """One import cycle as a path (first module repeated at the end), or ``None``."""
    state: Dict[str, int] = {}  # 1: on the current path, 2: done
    path: List[str] = []

    def visit(module: str) -> Optional[List[str]]:
        state[module] = 1
        path.append(module)
        for target in sorted(graph.get(module, ())):
            if state.get(target) == 1:
                return path[path.index(target) :] + [target]
            if target not in state:
                cycle = visit(target)
                if cycle:
                    return cycle
        path.pop()
        state[module] = 2
        return None

    for module in sorted(graph):
        if module not in state:
            cycle = visit(module)
            if cycle:
                return cycle
    return None


class ImportCycleTest(unittest.TestCase):
    def test_the_package_has_no_import_cycle(self) -> None:
        graph = import_graph(PACKAGE_DIR)
        self.assertIn("client", graph)
        self.assertIn("guard", graph["client"])  # the graph sees the package's imports
        cycle = find_cycle(graph)
        self.assertIsNone(cycle, f"import cycle: {' -> '.join(cycle or [])}")

    def test_the_check_finds_a_cycle_made_only_for_the_type_checker(self) -> None:
        with tempfile.TemporaryDirectory() as root:
            package_dir = os.path.join(root, "pkg")
            os.mkdir(package_dir)
            sources = {
                "__init__.py": "from .a import A\n",
                "a.py": "from .b import B\nclass A: pass\n",
                "b.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.a import A\nclass B: pass\n",
                "c.py": "from . import a\n",
            }
            for name, text in sources.items():
                with open(os.path.join(package_dir, name), "w", encoding="utf-8") as out:
                    out.write(text)
            graph = import_graph(package_dir)
            self.assertEqual(graph, {"__init__": {"a"}, "a": {"b"}, "b": {"a"}, "c": {"a"}})
            self.assertEqual(find_cycle(graph), ["a", "b", "a"])
            del graph["b"]
            self.assertIsNone(find_cycle(graph))


EXPECTED_KEYWORDS = [
    ("agent_id", inspect.Parameter.empty),
    ("action", inspect.Parameter.empty),
    ("resource", None),
    ("amount", None),
    ("context", None),
    ("ttl_seconds", None),
    ("session_id", None),
    ("on_behalf_of", None),
    ("amounts", None),
    ("args_digest", None),
]


class DecisionRequestTest(unittest.TestCase):
    def test_decide_and_guard_of_both_clients_show_the_request_keywords(self) -> None:
        for method in (AuthzClient.decide, AuthzClient.guard, AsyncAuthzClient.decide, AsyncAuthzClient.guard):
            parameters = list(inspect.signature(method).parameters.values())
            self.assertEqual(parameters[0].name, "self", method.__qualname__)
            self.assertEqual(
                [(p.name, p.default) for p in parameters[1:]],
                EXPECTED_KEYWORDS,
                method.__qualname__,
            )
            self.assertTrue(all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in parameters[1:]), method.__qualname__)
        self.assertEqual(list(FIELDS), [name for name, _ in EXPECTED_KEYWORDS])

    def test_no_function_of_the_package_declares_the_keywords_again(self) -> None:
        for name in sorted(os.listdir(PACKAGE_DIR)):
            if not name.endswith(".py"):
                continue
            with open(os.path.join(PACKAGE_DIR, name), encoding="utf-8") as source:
                tree = ast.parse(source.read(), filename=name)
            for node in ast.walk(tree):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    arguments = node.args.args + node.args.kwonlyargs
                    self.assertNotIn("ttl_seconds", [a.arg for a in arguments], f"{name}: {node.name} declares the request's keywords")

    def test_the_body_leaves_out_none_and_takes_the_defaults(self) -> None:
        fields = {"agent_id": "bot", "action": "orders.read", "resource": None, "amount": 0, "session_id": None, "on_behalf_of": "user_1"}
        self.assertEqual(
            decision_request(fields, session_id="run_1", on_behalf_of="user_default"),
            {"agent_id": "bot", "action": "orders.read", "amount": 0, "session_id": "run_1", "on_behalf_of": "user_1"},
        )
        self.assertEqual(decision_request({"agent_id": "bot", "action": "x"}), {"agent_id": "bot", "action": "x"})

    def test_a_wrong_keyword_is_a_type_error_before_any_request(self) -> None:
        client = AuthzClient(base_url="http://127.0.0.1:9", api_key="svc_test_sk_unused", retries=0)
        with self.assertRaisesRegex(TypeError, "'amont'"):
            client.decide(agent_id="bot", action="orders.read", amont=5)
        with self.assertRaisesRegex(TypeError, "'action'"):
            client.guard(agent_id="bot")
        with self.assertRaises(TypeError):
            client.decide("bot", "orders.read")  # type: ignore[misc]
        asynchronous = AsyncAuthzClient(base_url="http://127.0.0.1:9", api_key="svc_test_sk_unused", retries=0)
        with self.assertRaisesRegex(TypeError, "'ttl'"):
            asynchronous.guard(agent_id="bot", action="orders.read", ttl=5)


if __name__ == "__main__":
    unittest.main()
