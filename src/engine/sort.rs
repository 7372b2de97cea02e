//! A stable sort with one compiled copy. The standard `sort_by` is generic over the element and
//! the comparison, so every call site compiles its own driftsort, partition and small-sort (about
//! 2 KiB of wasm each; docs/decisions.md, "Size of the Worker"). Here the sort runs on indices with
//! the comparison behind `dyn`, so there is one instance of the standard sort in the Worker, and
//! each call site adds only a small permutation loop. The result is exactly the standard stable
//! sort's: equal elements keep their order.
//!
//! Collecting into a `BTreeMap`, a `BTreeSet` or a JSON object (`collect()`, `from_iter`) sorts
//! too: the standard library collects the items, sorts them and builds the tree, with a sort
//! compiled for each iterator type. [`object`] and [`set`] insert the items one by one instead
//! (`extend`), which builds the same map without a sort of its own.

use serde_json::{Map, Value};
use std::cmp::Ordering;
use std::collections::BTreeSet;

/// Sorts `items` stably by `cmp`, like `slice::sort_by`.
pub fn sort_by<T>(items: &mut [T], mut cmp: impl FnMut(&T, &T) -> Ordering) {
    let mut order = sorted_indices(items.len(), &mut |a, b| cmp(&items[a], &items[b]));
    permute(items, &mut order);
}

/// Sorts `items` stably by the key `key` gives, like `slice::sort_by_key`.
pub fn sort_by_key<T, K: Ord>(items: &mut [T], mut key: impl FnMut(&T) -> K) {
    sort_by(items, |a, b| key(a).cmp(&key(b)));
}

/// The indices `0..len` in the stable order `cmp` gives them: the one copy of the standard sort.
fn sorted_indices(len: usize, cmp: &mut dyn FnMut(usize, usize) -> Ordering) -> Vec<usize> {
    let mut order: Vec<usize> = (0..len).collect();
    order.sort_by(|&a, &b| cmp(a, b));
    order
}

/// Puts `items[order[k]]` at position `k` for every `k`, following each cycle of the permutation
/// with swaps (no clones, no second vector of `T`). Leaves `order` as the identity.
fn permute<T>(items: &mut [T], order: &mut [usize]) {
    for start in 0..items.len() {
        let mut at = start;
        while order[at] != start {
            let from = order[at];
            items.swap(at, from);
            order[at] = at;
            at = from;
        }
        order[at] = at;
    }
}

/// The JSON object of `pairs`, like `collect::<Map<String, Value>>()`: a later pair with the same
/// key replaces an earlier one.
pub fn object(pairs: impl IntoIterator<Item = (String, Value)>) -> Map<String, Value> {
    let mut map = Map::new();
    map.extend(pairs);
    map
}

/// The set of `items`, like `collect::<BTreeSet<T>>()`.
pub fn set<T: Ord>(items: impl IntoIterator<Item = T>) -> BTreeSet<T> {
    let mut set = BTreeSet::new();
    set.extend(items);
    set
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every permutation of a small list with repeated keys sorts as the standard stable sort does,
    /// equal keys in their original order.
    #[test]
    fn same_order_as_the_standard_stable_sort() {
        let mut seed = 7u64;
        for len in 0..40 {
            for _ in 0..25 {
                let items: Vec<(u8, usize)> = (0..len)
                    .map(|i| {
                        seed = seed
                            .wrapping_mul(6364136223846793005)
                            .wrapping_add(1442695040888963407);
                        ((seed >> 60) as u8, i)
                    })
                    .collect();
                let mut ours = items.clone();
                sort_by(&mut ours, |a, b| a.0.cmp(&b.0));
                let mut std = items.clone();
                std.sort_by_key(|a| a.0);
                assert_eq!(ours, std, "{items:?}");
                let mut ours = items.clone();
                sort_by_key(&mut ours, |a| std::cmp::Reverse(a.0));
                let mut std = items;
                std.sort_by_key(|a| std::cmp::Reverse(a.0));
                assert_eq!(ours, std);
            }
        }
    }

    /// A repeated key keeps its last value, as `collect` does; the set drops repeats.
    #[test]
    fn object_and_set_are_what_collect_builds() {
        let pairs = || {
            [("b", 1), ("a", 2), ("b", 3)]
                .into_iter()
                .map(|(k, v)| (k.to_string(), Value::from(v)))
        };
        assert_eq!(object(pairs()), pairs().collect::<Map<String, Value>>());
        assert_eq!(object(pairs())["b"], 3);
        assert_eq!(set([3, 1, 3, 2]), BTreeSet::from([1, 2, 3]));
    }
}
