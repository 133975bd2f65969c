import numpy as np

from preprocessing.split import shard_name, split_indices


def labels_and_keys(n=1000, classes=4, seed=0):
    labels = np.random.default_rng(seed).integers(0, classes, size=n)
    return labels, [f"example-{i}" for i in range(n)]


def test_split_is_deterministic_for_a_seed_and_changes_with_it():
    labels, keys = labels_and_keys()
    first = split_indices(keys, labels, 0.2, seed=3)
    again = split_indices(keys, labels, 0.2, seed=3)
    other = split_indices(keys, labels, 0.2, seed=4)
    assert all(np.array_equal(a, b) for a, b in zip(first, again))
    assert not np.array_equal(np.sort(first[1]), np.sort(other[1]))


def test_split_is_stratified_and_covers_every_example_once():
    labels, keys = labels_and_keys()
    train, evaluation = split_indices(keys, labels, 0.25, seed=0)
    assert sorted(np.concatenate([train, evaluation])) == list(range(len(labels)))
    for label in np.unique(labels):
        total = np.sum(labels == label)
        assert np.sum(labels[evaluation] == label) == round(total * 0.25)


def test_split_does_not_depend_on_input_order():
    labels, keys = labels_and_keys()
    order = np.random.default_rng(9).permutation(len(keys))
    shuffled_keys = [keys[i] for i in order]
    _, evaluation = split_indices(keys, labels, 0.2, seed=0)
    _, shuffled_evaluation = split_indices(shuffled_keys, labels[order], 0.2, seed=0)
    # Same examples, in the same (hash) order, whatever order they were read in.
    assert [keys[i] for i in evaluation] == [shuffled_keys[i] for i in shuffled_evaluation]


def test_split_order_is_shuffled_not_input_order():
    labels, keys = labels_and_keys()
    train, _ = split_indices(keys, labels, 0.2, seed=0)
    assert not np.all(np.diff(train) > 0)


def test_shard_names_sort_in_shard_order():
    names = [shard_name("train", i, 12) for i in range(12)]
    assert names[0] == "train-00000-of-00012.tfrecord"
    assert sorted(names) == names
