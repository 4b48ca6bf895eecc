"""The compile stage (rule ``compile``): every CUDA configuration of an experiment built to
a cubin with NVRTC on the CPU, on every core and without the GPU, before and beside the
GPU jobs; measure and profile load the cubins instead of compiling (compile.cubins)."""
