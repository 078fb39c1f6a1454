"""The memory clinic: a member's ``torch.cuda.memory._dump_snapshot()`` replayed under
other allocator settings, with a recommended ``PYTORCH_CUDA_ALLOC_CONF`` (see
docs/simulator.md).

`analysis` runs in the runner's sandboxed child (`child`), never in the bot process;
`submit` and `celery_task` are the local and Celery runners' side. Importing this package
loads nothing heavy: matplotlib only when the child draws.
"""
