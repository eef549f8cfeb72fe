//! Formats against independent oracles (calendar arithmetic, `std::net`, simple checkers).

use super::*;

fn fmt_regexes(name: &str) -> Vec<Regex> {
    build_all(&string_regexes(&StringConstraints { format: Some(name.into()), ..Default::default() }).unwrap())
}

fn check_format(name: &str, rng: &mut Rng, samples: &[String], oracle: impl Fn(&str) -> bool) -> (usize, usize) {
    let res = fmt_regexes(name);
    let (mut yes, mut no) = (0, 0);
    for s in samples {
        let want = oracle(s);
        let lit = canonical(s);
        assert_eq!(all_match(&res, &lit), want, "format {name} on {s:?} as {lit}");
        // Other encodings: never accepted when the value is invalid; accepted when valid unless
        // they `\u`-escape a character that could be raw (formats refuse those, documented).
        let alt = random_encoding(rng, s);
        let got = all_match(&res, &alt);
        assert!(!got || want, "format {name} accepts invalid {s:?} as {alt}");
        if want && !alt.contains("\\u") {
            assert!(got, "format {name} rejects {s:?} as {alt}");
        }
        if want {
            yes += 1;
        } else {
            no += 1;
        }
    }
    assert!(yes > samples.len() / 20 && no > samples.len() / 20, "{name}: {yes} valid / {no} invalid samples");
    (yes, no)
}

fn mutate(rng: &mut Rng, s: &str, alphabet: &[char]) -> String {
    let mut t: Vec<char> = s.chars().collect();
    match rng.below(4) {
        0 if !t.is_empty() => {
            let i = rng.below(t.len());
            t[i] = *rng.pick(alphabet);
        }
        1 if !t.is_empty() => {
            t.remove(rng.below(t.len()));
        }
        2 => t.insert(rng.below(t.len() + 1), *rng.pick(alphabet)),
        _ => {}
    }
    t.into_iter().collect()
}

fn days_in_month(y: u32, m: u32) -> u32 {
    match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if (y.is_multiple_of(4) && !y.is_multiple_of(100)) || y.is_multiple_of(400) => 29,
        2 => 28,
        _ => 0,
    }
}

fn digits(s: &str) -> Option<u32> {
    (!s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())).then(|| s.parse().ok()).flatten()
}

fn oracle_date(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return false;
    }
    let (Some(y), Some(m), Some(d)) = (digits(&s[0..4]), digits(&s[5..7]), digits(&s[8..10])) else { return false };
    (1..=12).contains(&m) && d >= 1 && d <= days_in_month(y, m)
}

fn oracle_time(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() < 9 || b[2] != b':' || b[5] != b':' || !s.is_ascii() {
        return false;
    }
    let (Some(h), Some(m), Some(sec)) = (digits(&s[0..2]), digits(&s[3..5]), digits(&s[6..8])) else { return false };
    let mut rest = &s[8..];
    if let Some(r) = rest.strip_prefix('.') {
        let n = r.bytes().take_while(u8::is_ascii_digit).count();
        if n == 0 {
            return false;
        }
        rest = &r[n..];
    }
    let offset: i64 = match rest {
        "Z" | "z" => 0,
        _ => {
            let ob = rest.as_bytes();
            if ob.len() != 6 || !(ob[0] == b'+' || ob[0] == b'-') || ob[3] != b':' {
                return false;
            }
            let (Some(oh), Some(om)) = (digits(&rest[1..3]), digits(&rest[4..6])) else { return false };
            if oh > 23 || om > 59 {
                return false;
            }
            let v = i64::from(oh * 60 + om);
            if ob[0] == b'+' {
                v
            } else {
                -v
            }
        }
    };
    if h > 23 || m > 59 || sec > 60 {
        return false;
    }
    sec < 60 || (i64::from(h * 60 + m) - offset).rem_euclid(1440) == 1439
}

fn oracle_date_time(s: &str) -> bool {
    s.len() > 11
        && s.is_char_boundary(10)
        && s.is_char_boundary(11)
        && oracle_date(&s[..10])
        && matches!(&s[10..11], "T" | "t")
        && oracle_time(&s[11..])
}

fn random_time(rng: &mut Rng) -> String {
    let frac = if rng.percent(30) { format!(".{}", rng.below(1000)) } else { String::new() };
    let (oh, om) = (rng.below(26), rng.below(62));
    let sign = if rng.percent(50) { '+' } else { '-' };
    let (h, m) = if rng.percent(50) {
        // Make the leap second land on 23:59 UTC most of the time.
        let off = (oh * 60 + om) as i64 * if sign == '+' { 1 } else { -1 };
        let local = (1439 + off + if rng.percent(80) { 0 } else { rng.below(3) as i64 - 1 }).rem_euclid(1440);
        ((local / 60) as usize, (local % 60) as usize)
    } else {
        (rng.below(26), rng.below(62))
    };
    let sec = if rng.percent(50) { 60 } else { rng.below(62) };
    let offset = match rng.below(6) {
        0 => "Z".to_string(),
        1 => "z".to_string(),
        _ => format!("{sign}{oh:02}:{om:02}"),
    };
    format!("{h:02}:{m:02}:{sec:02}{frac}{offset}")
}

fn random_date(rng: &mut Rng) -> String {
    let y = match rng.below(4) {
        0 => *rng.pick(&[0, 100, 400, 1900, 2000, 2100, 2400]),
        1 => rng.below(2500) / 4 * 4,
        _ => rng.below(10000),
    };
    format!("{y:04}-{:02}-{:02}", rng.below(14), if rng.percent(50) { 28 + rng.below(5) } else { rng.below(33) })
}

#[test]
fn date_time_formats_agree_with_calendar_arithmetic() {
    let mut rng = Rng(0x5151_7272_9393_A4A4);
    let noise: Vec<char> = "0123456789-:T.+Zz ".chars().collect();
    let dates: Vec<String> = (0..3000)
        .map(|i| {
            let d = random_date(&mut rng);
            if i % 5 == 0 {
                mutate(&mut rng, &d, &noise)
            } else {
                d
            }
        })
        .collect();
    let times: Vec<String> = (0..4000)
        .map(|i| {
            let t = random_time(&mut rng);
            if i % 7 == 0 {
                mutate(&mut rng, &t, &noise)
            } else {
                t
            }
        })
        .collect();
    let date_times: Vec<String> = (0..3000)
        .map(|i| {
            let sep = if rng.percent(80) { "T" } else { *rng.pick(&["t", " ", "x"]) };
            let dt = format!("{}{sep}{}", random_date(&mut rng), random_time(&mut rng));
            if i % 9 == 0 {
                mutate(&mut rng, &dt, &noise)
            } else {
                dt
            }
        })
        .collect();
    let d = check_format("date", &mut rng, &dates, oracle_date);
    let t = check_format("time", &mut rng, &times, oracle_time);
    let dt = check_format("date-time", &mut rng, &date_times, oracle_date_time);
    println!("date {d:?}, time {t:?}, date-time {dt:?} (valid, invalid)");
}

#[test]
fn ip_formats_agree_with_std_net() {
    let mut rng = Rng(0x7777_1111_3333_5555);
    let octets = ["0", "1", "9", "10", "99", "100", "199", "200", "249", "250", "255", "256", "300", "01", "00", "001"];
    let v4: Vec<String> = (0..3000)
        .map(|_| {
            let n = if rng.percent(85) { 4 } else { 3 + 2 * rng.below(2) };
            let s = (0..n).map(|_| *rng.pick(&octets)).collect::<Vec<_>>().join(".");
            if rng.percent(10) {
                mutate(&mut rng, &s, &['.', '1', 'a', ' ', '٣'])
            } else {
                s
            }
        })
        .collect();
    let groups = ["0", "1", "ff", "FFFF", "abcd", "12345", "0db8", "g"];
    let v6: Vec<String> = (0..6000)
        .map(|_| {
            let n = rng.below(10);
            let mut parts: Vec<String> = (0..n).map(|_| rng.pick(&groups).to_string()).collect();
            if rng.percent(30) {
                parts.push(format!(
                    "{}.{}.{}.{}",
                    rng.pick(&octets),
                    rng.pick(&octets),
                    rng.pick(&octets),
                    rng.pick(&octets)
                ));
            }
            if rng.percent(70) {
                let i = rng.below(parts.len() + 1);
                parts.insert(i, String::new());
                if i == 0 || i == parts.len() - 1 {
                    parts.insert(i, String::new());
                }
            }
            let s = parts.join(":");
            if rng.percent(10) {
                mutate(&mut rng, &s, &[':', '1', 'f', '.', ' ', '%'])
            } else {
                s
            }
        })
        .collect();
    let a = check_format("ipv4", &mut rng, &v4, |s| std::net::Ipv4Addr::from_str(s).is_ok());
    let b = check_format("ipv6", &mut rng, &v6, |s| std::net::Ipv6Addr::from_str(s).is_ok());
    println!("ipv4 {a:?}, ipv6 {b:?} (valid, invalid)");
}

fn oracle_json_pointer(s: &str) -> bool {
    (s.is_empty() || s.starts_with('/')) && s.split('~').skip(1).all(|p| p.starts_with('0') || p.starts_with('1'))
}

fn oracle_relative_json_pointer(s: &str) -> bool {
    let n = s.bytes().take_while(u8::is_ascii_digit).count();
    if n == 0 || (n > 1 && s.starts_with('0')) {
        return false;
    }
    let rest = &s[n..];
    rest == "#" || oracle_json_pointer(rest)
}

fn oracle_hostname(s: &str) -> bool {
    s.len() <= 253
        && s.split('.').all(|l| {
            let b = l.as_bytes();
            !b.is_empty()
                && b.len() <= 63
                && b.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'-')
                && b[0] != b'-'
                && b[b.len() - 1] != b'-'
                && !(b.len() >= 4 && b[2] == b'-' && b[3] == b'-')
        })
}

fn oracle_uuid(s: &str) -> bool {
    let parts: Vec<&str> = s.split('-').collect();
    parts.len() == 5
        && parts.iter().zip([8, 4, 4, 4, 12]).all(|(p, n)| p.len() == n && p.bytes().all(|b| b.is_ascii_hexdigit()))
}

fn oracle_duration(s: &str) -> bool {
    let Some(rest) = s.strip_prefix('P') else { return false };
    let (date, time) = match rest.split_once('T') {
        Some((d, t)) => (d, Some(t)),
        None => (rest, None),
    };
    let units = |part: &str| -> Option<String> {
        let mut out = String::new();
        let mut digits = 0;
        for c in part.chars() {
            if c.is_ascii_digit() {
                digits += 1;
            } else {
                if digits == 0 {
                    return None;
                }
                out.push(c);
                digits = 0;
            }
        }
        (digits == 0).then_some(out)
    };
    let Some(du) = units(date) else { return false };
    if du == "W" {
        return time.is_none();
    }
    if !du.is_empty() && !"YMD".contains(du.as_str()) {
        return false;
    }
    match time {
        None => !du.is_empty(),
        Some(t) => units(t).is_some_and(|tu| !tu.is_empty() && "HMS".contains(tu.as_str())),
    }
}

#[test]
fn other_formats_agree_with_simple_oracles() {
    let mut rng = Rng(0x2468_ACE0_1357_9BDF);
    let samples = |seeds: &[&str], alphabet: &str, n: usize, rng: &mut Rng| -> Vec<String> {
        let alpha: Vec<char> = alphabet.chars().collect();
        (0..n)
            .map(|_| {
                let mut s = rng.pick(seeds).to_string();
                for _ in 0..rng.below(4) {
                    s = mutate(rng, &s, &alpha);
                }
                s
            })
            .collect()
    };
    let jp = samples(&["", "/", "/a~0b/~1", "/foo//bar", "/😀/\"\\", "a/b", "#/a"], "/~01a\"\\\u{0}é", 3000, &mut rng);
    let rjp = samples(&["0", "1#", "12/a~1", "0//", "10/x", "01/a"], "0123/~#a", 3000, &mut rng);
    let host = samples(
        &["www.example.com", "a", "a--b.com", "xn--abc.com", "ab-c.d-e", "a.b.c.d"],
        "a0-.-_Ké",
        3000,
        &mut rng,
    );
    let uuid = samples(
        &["2eb8aa08-aa98-11ea-b4aa-73b441d16380", "00000000-0000-0000-0000-000000000000"],
        "0aF-g_",
        2000,
        &mut rng,
    );
    let dur = samples(&["P1Y2M3DT4H5M6S", "P2W", "PT1M", "P1D", "P1M2D", "PT36H"], "PTYMWDHS12", 4000, &mut rng);
    let r = [
        check_format("json-pointer", &mut rng, &jp, oracle_json_pointer),
        check_format("relative-json-pointer", &mut rng, &rjp, oracle_relative_json_pointer),
        check_format("hostname", &mut rng, &host, oracle_hostname),
        check_format("uuid", &mut rng, &uuid, oracle_uuid),
        check_format("duration", &mut rng, &dur, oracle_duration),
    ];
    // Long hostnames: the 253 limit is a separate regex.
    let res = fmt_regexes("hostname");
    let label = "a".repeat(63);
    let long = [label.as_str(); 4].join(".");
    assert_eq!(long.len(), 255);
    assert!(!all_match(&res, &canonical(&long)));
    assert!(all_match(&res, &canonical(&long[..253])));
    println!("json-pointer, relative-json-pointer, hostname, uuid, duration (valid, invalid): {r:?}");
}
