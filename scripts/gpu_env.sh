# Sourced by every scripts/gpu_*.sh, run from the project root on the device machine:
# the carried wheels (.whl/: pydantic and what the image lacks) onto the path, this
# checkout importable, Python unbuffered, and NVLink multicast off, as shared machines ask.
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
