"""The YAML files users write (a trainer's --config, a job's --job-config), read as PyYAML's safe_load
reads them, but for a key given twice in one mapping: an error at its line, where PyYAML lets the last
one win in silence."""

from __future__ import annotations

from collections.abc import Hashable

import yaml

MERGE_TAG = "tag:yaml.org,2002:merge"  # `<<: *defaults`, whose keys the mapping's own may override


class _UniqueKeys(yaml.SafeLoader):
    def construct_mapping(self, node, deep=False):
        seen = set()
        for key_node, _ in node.value:
            if key_node.tag == MERGE_TAG:
                continue
            key = self.construct_object(key_node, deep=True)
            if not isinstance(key, Hashable):  # PyYAML refuses it itself
                continue
            if key in seen:  # 1, 1.0 and true are one key in the dict PyYAML makes, too
                raise yaml.constructor.ConstructorError(None, None, f"{key!r} is given twice", key_node.start_mark)
            seen.add(key)
        return super().construct_mapping(node, deep)


def safe_load(stream):
    """What yaml.safe_load reads, or a yaml.YAMLError for a key given twice in one mapping."""
    return yaml.load(stream, Loader=_UniqueKeys)
