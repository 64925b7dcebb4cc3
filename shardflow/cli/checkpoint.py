"""``shardflow checkpoint``: inspect and convert sharded checkpoints (docs/CHECKPOINT.md).

    shardflow checkpoint consolidate <folder> <out.safetensors>   sharded -> one file
    shardflow checkpoint shard <in.safetensors> <folder>          one file -> sharded (1 rank)
    shardflow checkpoint info <folder>                            what the index holds

``consolidate`` reads every piece once, verifies its checksums and writes a file that
``shardflow.load`` returns as the saved state dict with whole tensors. ``shard`` makes a
folder that ``shardflow.distributed.checkpoint.load`` reshards into any layout.
"""

from __future__ import annotations

import argparse
import sys

USAGE = __doc__.split("\n\n")[1]


def _info(folder) -> int:
    from ..distributed.checkpoint import FileSystemReader

    index = FileSystemReader(folder).read_index()
    total = sum(f["bytes"] for f in index["files"].values())
    print(f"{folder}: saved by {index['world_size']} rank(s), save id {index['save_id']}, "
          f"{len(index['files'])} file(s), {total} bytes")
    for name, e in sorted(index["tensors"].items()):
        lay = "plain" if e["saved_as"] is None else \
            f"{e['saved_as']['sbp']} on {e['saved_as']['placement']}"
        print(f"  {name}: {e['dtype']} {tuple(e['shape'])}, {lay}, {len(e['shards'])} piece(s)")
    for name in sorted(index["objects"]):
        print(f"  {name}: value")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="shardflow checkpoint", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="action", required=True)
    c = sub.add_parser("consolidate", help="sharded checkpoint folder -> one safetensors file")
    c.add_argument("folder")
    c.add_argument("out")
    s = sub.add_parser("shard", help="one safetensors file -> sharded checkpoint folder")
    s.add_argument("file")
    s.add_argument("folder")
    i = sub.add_parser("info", help="print what a sharded checkpoint holds")
    i.add_argument("folder")
    args = ap.parse_args(argv)

    from ..checkpoint import CheckpointError

    try:
        if args.action == "info":
            return _info(args.folder)
        if args.action == "consolidate":
            from ..distributed.checkpoint import dcp_to_safetensors

            state = dcp_to_safetensors(args.folder, args.out)
            print(f"wrote {args.out} ({_count(state)} tensors) from {args.folder}")
            return 0
        from ..distributed.checkpoint import safetensors_to_dcp

        index = safetensors_to_dcp(args.file, args.folder)
        print(f"wrote {args.folder} ({len(index['tensors'])} tensors, "
              f"{len(index['objects'])} values) from {args.file}")
        return 0
    except (CheckpointError, FileNotFoundError, ValueError, TypeError) as e:
        print(f"shardflow checkpoint {args.action}: {e}", file=sys.stderr)
        return 1


def _count(node) -> int:
    if isinstance(node, dict):
        return sum(_count(v) for v in node.values())
    return int(hasattr(node, "array"))


if __name__ == "__main__":
    sys.exit(main())
