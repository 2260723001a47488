fn main() {
    let p = std::env::args().nth(1).unwrap();
    let s = String::from_utf8(std::fs::read(&p).unwrap()).unwrap();
    let q = kfsched_yaml::Tree::parse_quick(&s, 0).map(|t| t.dump());
    let r = kfsched_yaml::Tree::parse_by_parser(&s).map(|t| t.dump());
    match (q, r) {
        (Some(q), Ok(r)) => {
            for (a, b) in q.lines().zip(r.lines()) {
                if a != b {
                    println!(
                        "quick : {}\nparser: {}",
                        &a[..a.len().min(400)],
                        &b[..b.len().min(400)]
                    );
                    let f: Vec<&str> = b.split_whitespace().collect();
                    if let Some(sp) = f.iter().find(|x| x.contains("..")) {
                        let (x, y) = sp.split_once("..").unwrap();
                        let (x, y): (usize, usize) =
                            (x.parse().unwrap_or(0), y.parse().unwrap_or(0));
                        println!(
                            "parser text: {:?}",
                            &s[x.saturating_sub(40)..(y + 40).min(s.len())]
                        );
                    }
                    return;
                }
            }
            println!("same");
        }
        (q, r) => println!("quick {:?} parser {:?}", q.is_some(), r.err()),
    }
}
