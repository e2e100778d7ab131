"""Rewrites a CUDA source into plain C++ for the CPU emulation (run.sh): kernel launches
`k<<<grid, block, smem, stream>>>(args)` become `EmuLaunch(k, grid, block, smem, stream, args)`
and `extern __shared__` arrays point at the emulator's dynamic shared-memory buffer.
Usage: xform.py IN.cu OUT.cc"""
import re
import sys

src, dst = sys.argv[1], sys.argv[2]
s = open(src).read()
s = s.replace('extern __shared__ __align__(16) unsigned char smem[];',
              'unsigned char* smem = g_dyn_smem;')
s = s.replace('extern __shared__ __align__(16) float smem[];',
              'float* smem = reinterpret_cast<float*>(g_dyn_smem);')
s = re.sub(r'([A-Za-z_][\w<>, ]*?)<<<(.*?)>>>\(',
           lambda m: 'EmuLaunch(' + m.group(1) + ', ' + m.group(2) + ', ', s, flags=re.S)
if '<<<' in s or 'extern __shared__' in s:
    sys.exit(f'xform.py: {src} has a launch or extern __shared__ form this script does not know')
open(dst, 'w').write(s)
