"""tolk's IR. Importing this package pulls in neither the runtime nor the Tensor."""

from tolk.uop.ops import (
    ARG_TYPES,
    GroupOp,
    KernelInfo,
    Ops,
    UOp,
    fresh_buffer_slot,
    fresh_internal_buffer_slot,
    intern_table_size,
    register_arg_type,
    render_graph,
)
from tolk.uop.rewrite import RewriteError, Rules, graph_rewrite
from tolk.uop.serial import GraphFormatError, export_graph, import_graph

__all__ = [
    "ARG_TYPES", "GroupOp", "KernelInfo", "Ops", "UOp", "fresh_buffer_slot",
    "fresh_internal_buffer_slot", "intern_table_size", "register_arg_type", "render_graph",
    "RewriteError", "Rules", "graph_rewrite", "GraphFormatError", "export_graph", "import_graph",
]
