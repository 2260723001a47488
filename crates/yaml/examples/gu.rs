fn main() {
    for p in std::env::args().skip(1) {
        let s = std::fs::read_to_string(&p).unwrap();
        let r = kfsched_yaml::quick::gives_up_at(&s);
        let t = std::time::Instant::now();
        let q = kfsched_yaml::Tree::parse_quick(&s, 0).map(|t| t.len());
        let tq = t.elapsed();
        let t = std::time::Instant::now();
        let slow = kfsched_yaml::Tree::parse_by_parser(&s)
            .map(|t| t.len())
            .ok();
        let ts = t.elapsed();
        println!(
            "{p}: accepts gives up at {r:?}; quick tree {q:?} in {tq:?}; parser {slow:?} in {ts:?}"
        );
    }
}
