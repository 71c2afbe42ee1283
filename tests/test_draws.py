"""vinifera.draws against the stdlib: the same items and the same generator
state after, so a simulation's logs do not change with it."""

import random

import pytest

from vinifera.draws import choice, sample

# both of random.sample's methods: a pool list (n <= setsize) and a set of
# the indices taken (n > setsize: 21 + 4 ** ceil(log4(3k)) when k > 5)
SIZES = [*range(0, 26), 40, 84, 85, 86, 300]


@pytest.mark.parametrize("n", SIZES)
def test_sample_draws_as_the_stdlib(n):
    population = [f"node-{i}" for i in range(n)]
    for seed in range(40):
        for k in sorted({0, 1, 2, 5, 6, 7, 8, 9, n // 3, n // 2, n}):
            if k > n:
                continue
            ours, theirs = random.Random(seed), random.Random(seed)
            assert sample(ours, population, k) == theirs.sample(population, k)
            assert ours.getstate() == theirs.getstate()


def test_sample_leaves_the_population_alone_and_refuses_too_many():
    population = list(range(10))
    sample(random.Random(1), population, 10)
    assert population == list(range(10))
    with pytest.raises(ValueError):
        sample(random.Random(1), population, 11)
    with pytest.raises(ValueError):
        sample(random.Random(1), population, -1)


@pytest.mark.parametrize("n", [1, 2, 3, 7, 8, 9, 64, 65, 1000])
def test_choice_draws_as_the_stdlib(n):
    seq = list(range(n))
    for seed in range(100):
        ours, theirs = random.Random(seed), random.Random(seed)
        assert choice(ours, seq) == theirs.choice(seq)
        assert ours.getstate() == theirs.getstate()
    with pytest.raises(IndexError):
        choice(random.Random(1), [])
