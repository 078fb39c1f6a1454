"""PYTORCH_CUDA_ALLOC_CONF parsing: accepted forms and torch's rejection messages."""

from __future__ import annotations

import pytest

from gpu_runner.sim import AllocatorConfigError, CachingAllocator, GiB, MiB, parse_conf
from gpu_runner.sim._sizes import SIZE_MAX


def test_empty_conf_gives_torch_defaults() -> None:
    config = parse_conf("")
    assert not config.expandable_segments
    assert config.max_split_size == SIZE_MAX
    assert config.max_split_size_stat == -1
    assert config.max_non_split_rounding == 20 * MiB
    assert config.roundup_power2_divisions == (0,) * 16
    assert config.garbage_collection_threshold == 0.0


def test_all_simulated_keys_parse_with_whitespace() -> None:
    config = parse_conf(
        " expandable_segments : True , max_split_size_mb:256, max_non_split_rounding_mb:40,"
        "garbage_collection_threshold:0.8,roundup_power2_divisions:4"
    )
    assert config.expandable_segments
    assert config.max_split_size == 256 * MiB
    assert config.max_non_split_rounding == 40 * MiB
    assert config.garbage_collection_threshold == 0.8
    assert config.roundup_power2_divisions == (4,) * 16


def test_division_list_fills_lower_intervals_and_the_rest_after_the_last_key() -> None:
    config = parse_conf("roundup_power2_divisions:[256:1,512:2,1024:4,>:8]")
    # 256 MB is interval 8 and fills 0..7; '>' fills after 1024 MB (interval 10)
    assert config.roundup_power2_divisions == (1,) * 9 + (2, 4) + (8,) * 5


def test_large_segment_size_raises_the_max_split_bound() -> None:
    config = parse_conf("large_segment_size_mb:40,max_split_size_mb:40")
    assert config.large_segment_size == 40 * MiB
    assert config.max_non_split_rounding == 40 * MiB
    with pytest.raises(AllocatorConfigError, match="must be >= 40"):
        parse_conf("max_split_size_mb:30,large_segment_size_mb:40")


def test_unmodelled_torch_keys_are_accepted() -> None:
    parse_conf("release_lock_on_cudamalloc:True,pinned_num_register_threads:8,backend:native")


@pytest.mark.parametrize(
    ("conf", "message"),
    [
        ("foo:1", "Unrecognized key 'foo' in Accelerator allocator config."),
        (
            "max_split_size_mb:10",
            "CachingAllocator option max_split_size_mb too small, must be >= 20",
        ),
        (
            "max_non_split_rounding_mb:19",
            "CachingAllocator option max_non_split_rounding_mb too small, must be >= 20",
        ),
        (
            "garbage_collection_threshold:1.0",
            "garbage_collect_threshold is invalid, set it in (0.0, 1.0)",
        ),
        (
            "garbage_collection_threshold:0",
            "garbage_collect_threshold is invalid, set it in (0.0, 1.0)",
        ),
        ("roundup_power2_divisions:3", "For roundups, the divisions has to be power of 2 "),
        (
            "roundup_power2_divisions:[256:3]",
            "For roundups, the divisions has to be power of 2 or 0 to disable roundup ",
        ),
        ("roundup_power2_divisions:[300:2]", "For roundups, the intervals have to be power of 2 "),
        (
            "expandable_segments:true",
            "Expected 'True' or 'False' at index 2 in ConfigTokenizer but got 'true'",
        ),
        (
            "large_segment_size_mb:10",
            "CachingAllocator option large_segment_size_mb must be > 10 MB",
        ),
        (
            "per_process_memory_fraction:1.5",
            "per_process_memory_fraction is invalid, set it in [0.0, 1.0]",
        ),
        ("backend:magic", "Unknown allocator backend, options are native and cudaMallocAsync"),
    ],
)
def test_invalid_values_are_rejected_with_torchs_message(conf: str, message: str) -> None:
    with pytest.raises(AllocatorConfigError) as info:
        parse_conf(conf)
    assert str(info.value) == message
    assert isinstance(info.value, ValueError)  # TORCH_CHECK_VALUE raises ValueError


@pytest.mark.parametrize(
    ("conf", "fragment"),
    [
        ("max_split_size_mb:", "expecting max_split_size_mb value"),
        ("max_split_size_mb", "expected ':' after 'max_split_size_mb'"),
        ("max_split_size_mb:abc", "max_split_size_mb needs a non-negative integer, got 'abc'"),
        ("max_split_size_mb 40", "expected ':'"),
        ("expandable_segments:True:max_split_size_mb:40", "expected ','"),
        ("backend:cudaMallocAsync", "not simulated"),
    ],
)
def test_malformed_conf_names_the_problem(conf: str, fragment: str) -> None:
    with pytest.raises(AllocatorConfigError, match=fragment):
        parse_conf(conf)


def test_conf_fraction_caps_the_allocator_like_the_api() -> None:
    alloc = CachingAllocator(10 * GiB, conf="per_process_memory_fraction:0.5")
    assert alloc.allowed_memory_maximum == 5 * GiB


def test_allocator_rejects_invalid_conf() -> None:
    with pytest.raises(AllocatorConfigError, match="Unrecognized key 'expandable'"):
        CachingAllocator(GiB, conf="expandable:True")
