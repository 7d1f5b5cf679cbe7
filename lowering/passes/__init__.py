"""Every pass, one module each; importing this package registers them all."""

from cute_lowering.passes import (  # noqa: F401
    bitcast_to_ptx,
    check_collectives,
    extf_to_select,
    fptosi_to_ptx,
    fptosi_to_select,
    inline_asm_to_ptx,
    ptx_float_operands,
    truncf_to_select,
    wgmma_desc_hoist,
    wgmma_report,
)
