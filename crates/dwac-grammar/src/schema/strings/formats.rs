//! Formats: Rust regexes over the decoded value (fully anchored), encoded like patterns; the
//! module docs of `strings` list what each format accepts.

use super::{enc_hir_mode, parse_rust, unsupported, Encodings, StringError, HEX};

pub(super) fn value_literal(value_regex: &str, what: &str) -> Result<String, StringError> {
    let hir = parse_rust(value_regex, what)?;
    if !hir.properties().look_set().is_empty() {
        return Err(unsupported(format!("assertion in {what}")));
    }
    let mut s = String::from("\"");
    enc_hir_mode(&hir, &mut s, Encodings::Plain)?;
    s.push('"');
    Ok(s)
}

pub(super) fn format_regexes(name: &str) -> Result<Vec<String>, StringError> {
    let what = format!("format {name:?}");
    let values: Vec<String> = match name {
        "date" => vec![date_src()],
        "time" => vec![time_src(), leap_hour_src(), leap_minute_src()],
        "date-time" => {
            let any_date = "[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt]";
            vec![
                format!("{}[Tt]{}", date_src(), time_src()),
                format!("{any_date}{}", leap_hour_src()),
                format!("{any_date}{}", leap_minute_src()),
            ]
        }
        "duration" => vec![duration_src()],
        "email" => vec![email_src()],
        // The total-length regex only needs LDH characters and dots: the label regex allows no others.
        "hostname" => return Ok(vec![value_literal(&hostname_src(), &what)?, "\"[-.0-9A-Za-z]{1,253}\"".to_string()]),
        "ipv4" => vec![ipv4_src()],
        "ipv6" => vec![ipv6_src()],
        "uuid" => vec![format!("{HEX}{{8}}-{HEX}{{4}}-{HEX}{{4}}-{HEX}{{4}}-{HEX}{{12}}")],
        "uri" => vec![uri_src(false, false)],
        "uri-reference" => vec![uri_src(false, true)],
        "iri" => vec![uri_src(true, false)],
        "iri-reference" => vec![uri_src(true, true)],
        "uri-template" => vec![uri_template_src()],
        "json-pointer" => vec![JSON_POINTER.to_string()],
        "relative-json-pointer" => vec![format!("(?:0|[1-9][0-9]*)(?:#|{JSON_POINTER})")],
        _ => return Err(unsupported(format!("format {name:?} is not enforced"))),
    };
    values.iter().map(|v| value_literal(v, &what)).collect()
}

pub(super) const IPV4_OCTET: &str = "(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])";
pub(super) const JSON_POINTER: &str = "(?:/(?:[^/~]|~[01])*)*";
pub(super) const FRAC: &str = r"(?:\.[0-9]+)?";

pub(super) fn ipv4_src() -> String {
    format!(r"{IPV4_OCTET}(?:\.{IPV4_OCTET}){{3}}")
}

pub(super) fn date_src() -> String {
    let d31 = "(?:0[1-9]|[12][0-9]|3[01])";
    let d30 = "(?:0[1-9]|[12][0-9]|30)";
    let d28 = "(?:0[1-9]|1[0-9]|2[0-8])";
    let leap = "(?:[0-9]{2}(?:0[48]|[2468][048]|[13579][26])|(?:0[048]|[2468][048]|[13579][26])00)";
    format!("(?:[0-9]{{4}}-(?:(?:0[13578]|1[02])-{d31}|(?:0[469]|11)-{d30}|02-{d28})|{leap}-02-29)")
}

pub(super) fn time_src() -> String {
    format!("(?:[01][0-9]|2[0-3]):[0-5][0-9]:(?:[0-5][0-9]|60){FRAC}(?:[Zz]|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])")
}

/// Any time whose seconds are not 60 (the leap-second checks only constrain `:60`).
pub(super) fn no_leap_second_time() -> String {
    format!("[0-9]{{2}}:[0-9]{{2}}:[0-5][0-9]{FRAC}(?:[Zz]|[+-][0-9]{{2}}:[0-9]{{2}})")
}

/// Leap seconds, hour part: a `:60` second must be 23:59:60 in UTC. With local `hh:mm` and offset
/// `±oh:om`: for `+`, `oh = hh` when `mm < 59` and `oh = hh + 1 (mod 24)` when `mm = 59`; for `-`,
/// `oh = 23 - hh`; for `Z`, `hh = 23`. The minute part is checked by [`leap_minute_src`].
pub(super) fn leap_hour_src() -> String {
    let mut alts = vec![no_leap_second_time()];
    alts.push(format!("23:[0-9]{{2}}:60{FRAC}[Zz]"));
    for hh in 0..24u32 {
        alts.push(format!(
            r"{hh:02}:(?:(?:[0-4][0-9]|5[0-8]):60{FRAC}\+{hh:02}|59:60{FRAC}\+{next:02}|[0-9]{{2}}:60{FRAC}-{minus:02}):[0-9]{{2}}",
            next = (hh + 1) % 24,
            minus = 23 - hh
        ));
    }
    format!("(?:{})", alts.join("|"))
}

/// Leap seconds, minute part: for `+`, `om = mm + 1 (mod 60)`; for `-`, `om = 59 - mm`; for `Z`,
/// `mm = 59`.
pub(super) fn leap_minute_src() -> String {
    let mut alts = vec![no_leap_second_time()];
    alts.push(format!("[0-9]{{2}}:59:60{FRAC}[Zz]"));
    for mm in 0..60u32 {
        alts.push(format!(
            r"[0-9]{{2}}:{mm:02}:60{FRAC}(?:\+[0-9]{{2}}:{plus:02}|-[0-9]{{2}}:{minus:02})",
            plus = (mm + 1) % 60,
            minus = 59 - mm
        ));
    }
    format!("(?:{})", alts.join("|"))
}

pub(super) fn duration_src() -> String {
    let n = "[0-9]+";
    let time = format!("T(?:{n}H(?:{n}M(?:{n}S)?)?|{n}M(?:{n}S)?|{n}S)");
    let date = format!("(?:{n}D|{n}M(?:{n}D)?|{n}Y(?:{n}M(?:{n}D)?)?)");
    format!("P(?:{date}(?:{time})?|{time}|{n}W)")
}

pub(super) fn ipv6_src() -> String {
    let h = format!("{HEX}{{1,4}}");
    let ls32 = format!("(?:{h}:{h}|{})", ipv4_src());
    let rep = |k: usize| format!("(?:{h}:){{{k}}}");
    let pre = |k: usize| if k == 0 { format!("(?:{h})?") } else { format!("(?:(?:{h}:){{0,{k}}}{h})?") };
    let alts = [
        format!("{}{ls32}", rep(6)),
        format!("::{}{ls32}", rep(5)),
        format!("{}::{}{ls32}", pre(0), rep(4)),
        format!("{}::{}{ls32}", pre(1), rep(3)),
        format!("{}::{}{ls32}", pre(2), rep(2)),
        format!("{}::{h}:{ls32}", pre(3)),
        format!("{}::{ls32}", pre(4)),
        format!("{}::{h}", pre(5)),
        format!("{}::", pre(6)),
    ];
    format!("(?:{})", alts.join("|"))
}

pub(super) fn hostname_src() -> String {
    let a = "[A-Za-z0-9]";
    let l = "[A-Za-z0-9-]";
    // 1–3 characters; exactly 4; 5–63 with no `--` at positions 3–4.
    let label = format!("(?:{a}(?:{l}?{a})?|{a}{l}{l}{a}|{a}{l}(?:{a}{l}|-{a}){l}{{0,58}}{a})");
    format!(r"{label}(?:\.{label})*")
}

pub(super) fn email_src() -> String {
    let atext = r"[A-Za-z0-9!#$%&'*+\-/=?^_`{|}~]";
    let dot_string = format!(r"{atext}+(?:\.{atext}+)*");
    let quoted = r#""(?:[\x20\x21\x23-\x5B\x5D-\x7E]|\\[\x20-\x7E])*""#;
    let sub_domain = "[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?";
    let domain = format!(r"{sub_domain}(?:\.{sub_domain})*");
    let snum = "(?:25[0-5]|2[0-4][0-9]|[01][0-9]{2}|[0-9]{1,2})";
    let v4 = format!(r"{snum}(?:\.{snum}){{3}}");
    // RFC 5321 IPv6: "::" stands for at least two groups.
    let h = format!("{HEX}{{1,4}}");
    let groups = |k: usize| match k {
        0 => String::new(),
        1 => h.clone(),
        _ => format!("{h}(?::{h}){{{}}}", k - 1),
    };
    let mut v6 = vec![format!("{h}(?::{h}){{7}}"), format!("{h}(?::{h}){{5}}:{v4}")];
    for l in 0..=6 {
        for r in 0..=(6 - l) {
            v6.push(format!("{}::{}", groups(l), groups(r)));
        }
    }
    for l in 0..=4 {
        for r in 0..=(4 - l) {
            let right = if r == 0 { String::new() } else { format!("{}:", groups(r)) };
            v6.push(format!("{}::{right}{v4}", groups(l)));
        }
    }
    let addr = format!(r"\[(?:{v4}|[Ii][Pp][Vv]6:(?:{}))\]", v6.join("|"));
    format!("(?:{dot_string}|{quoted})@(?:{domain}|{addr})")
}

pub(super) const UCSCHAR: &str = r"\x{A0}-\x{D7FF}\x{F900}-\x{FDCF}\x{FDF0}-\x{FFEF}\x{10000}-\x{1FFFD}\x{20000}-\x{2FFFD}\x{30000}-\x{3FFFD}\x{40000}-\x{4FFFD}\x{50000}-\x{5FFFD}\x{60000}-\x{6FFFD}\x{70000}-\x{7FFFD}\x{80000}-\x{8FFFD}\x{90000}-\x{9FFFD}\x{A0000}-\x{AFFFD}\x{B0000}-\x{BFFFD}\x{C0000}-\x{CFFFD}\x{D0000}-\x{DFFFD}\x{E1000}-\x{EFFFD}";
pub(super) const IPRIVATE: &str = r"\x{E000}-\x{F8FF}\x{F0000}-\x{FFFFD}\x{100000}-\x{10FFFD}";

/// RFC 3986 `URI` / `URI-reference`, or RFC 3987 `IRI` / `IRI-reference` when `iri`.
pub(super) fn uri_src(iri: bool, reference: bool) -> String {
    let ucs = if iri { UCSCHAR } else { "" };
    let unreserved = format!(r"A-Za-z0-9\-._~{ucs}");
    let sub_delims = r"!$&'()*+,;=";
    let pct = format!("%{HEX}{{2}}");
    let class = |extra: &str| format!("(?:[{unreserved}{sub_delims}{extra}]|{pct})");
    let pchar = class(":@");
    let userinfo = format!("{}*", class(":"));
    let reg_name = format!("{}*", class(""));
    let ipv_future = format!(r"[vV]{HEX}+\.[A-Za-z0-9\-._~{sub_delims}:]+");
    let host = format!(r"(?:\[(?:{}|{ipv_future})\]|{reg_name})", ipv6_src());
    let authority = format!("(?:{userinfo}@)?{host}(?::[0-9]*)?");
    let segment = format!("{pchar}*");
    let segment_nz = format!("{pchar}+");
    let path_abempty = format!("(?:/{segment})*");
    let path_absolute = format!("/(?:{segment_nz}(?:/{segment})*)?");
    let path_rootless = format!("{segment_nz}(?:/{segment})*");
    let path_noscheme = format!("{}+(?:/{segment})*", class("@"));
    let private = if iri { IPRIVATE } else { "" };
    let query = format!("(?:{pchar}|[/?{private}])*");
    let fragment = format!("(?:{pchar}|[/?])*");
    let tail = format!(r"(?:\?{query})?(?:#{fragment})?");
    let scheme = r"[A-Za-z][A-Za-z0-9+\-.]*";
    let absolute = format!("{scheme}:(?://{authority}{path_abempty}|{path_absolute}|{path_rootless}|){tail}");
    if reference {
        let relative = format!("(?://{authority}{path_abempty}|{path_absolute}|{path_noscheme}|){tail}");
        format!("(?:{absolute}|{relative})")
    } else {
        absolute
    }
}

pub(super) fn uri_template_src() -> String {
    let pct = format!("%{HEX}{{2}}");
    let literals = format!(r"(?:[\x21\x23\x24\x26-\x3B\x3D\x3F-\x5B\x5D\x5F\x61-\x7A\x7E{UCSCHAR}{IPRIVATE}]|{pct})");
    let varchar = format!("(?:[A-Za-z0-9_]|{pct})");
    let varname = format!(r"{varchar}(?:\.?{varchar})*");
    let varspec = format!(r"{varname}(?::[1-9][0-9]{{0,3}}|\*)?");
    let expression = format!(r"\{{[+#./;?&]?{varspec}(?:,{varspec})*\}}");
    format!("(?:{literals}|{expression})*")
}
