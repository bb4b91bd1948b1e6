
#[test]
fn items_without_a_live_enabled_owner_are_excused_and_the_rest_are_missing() {
    use crate::decide::fixtures::{disabled, with_item};
    let (a, b, c) = (inst("10.0.0.1@-@1"), inst("10.0.0.2@-@2"), inst("10.0.0.3@-@3"));
    // Items: 0 a (live), 1 b (server disabled), 2 c (crashed), 3 a but item disabled, 4 no owner.
    let v = owned(view(&[&a, &b], None), &[(0, &a), (1, &b), (2, &c), (3, &a)]);
    let v = with_item(disabled(v, "10.0.0.2"), 3, |i| i.disabled = true);
    let f = PhaseFacts::read(&v, 5, None, BTreeSet::new(), false);
    let items = |s: &[u32]| s.iter().map(|i| ShardItem(*i)).collect::<BTreeSet<_>>();
    assert_eq!(f.excused, items(&[1, 2, 3, 4]));
    assert_eq!(f.missing(), [ShardItem(0)]);
    let registered = PhaseFacts::read(&v, 5, None, items(&[0]), false);
    assert!(registered.missing().is_empty());
}
