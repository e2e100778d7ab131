"""Rewrites a CUDA source into plain C++ for the CPU emulation (run.sh, run_backend.sh): kernel
launches `k<<<grid, block[, smem[, stream]]>>>(args)` become
`EmuLaunch(k, grid, block, smem, stream, args)` (smem 0 and the default stream when left out)
and `extern __shared__` arrays point at the emulator's dynamic shared-memory buffer.
Usage: xform.py IN.cu OUT.cc"""
import re
import sys


def split_top(s):
    """Splits s at the commas outside parentheses / brackets / braces."""
    parts, depth, cur = [], 0, ''
    for ch in s:
        if ch in '([{':
            depth += 1
        elif ch in ')]}':
            depth -= 1
        if ch == ',' and depth == 0:
            parts.append(cur.strip())
            cur = ''
        else:
            cur += ch
    parts.append(cur.strip())
    return parts


def launch(m):
    cfg = split_top(m.group(2))
    if not 2 <= len(cfg) <= 4:
        sys.exit(f'xform.py: launch configuration <<<{m.group(2)}>>> has {len(cfg)} parts')
    cfg += ['0', 'nullptr'][len(cfg) - 2:]
    return 'EmuLaunch(' + m.group(1) + ', ' + ', '.join(cfg) + ', '


src, dst = sys.argv[1], sys.argv[2]
s = open(src).read()
s = s.replace('extern __shared__ __align__(16) unsigned char smem[];',
              'unsigned char* smem = g_dyn_smem;')
s = s.replace('extern __shared__ __align__(16) float smem[];',
              'float* smem = reinterpret_cast<float*>(g_dyn_smem);')
# The kernel: a name with at most one template argument list (DenseGemvKernel<WT>).
s = re.sub(r'([A-Za-z_]\w*(?:<[^<>;]*>)?)<<<(.*?)>>>\(', launch, s, flags=re.S)
if '<<<' in s or 'extern __shared__' in s:
    sys.exit(f'xform.py: {src} has a launch or extern __shared__ form this script does not know')
open(dst, 'w').write(s)
