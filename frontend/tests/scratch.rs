#[test]
fn scratch() {
    for i in 0..5 {
        let p = format!("/tmp/fe/spec{i}.tfn");
        let t = std::fs::read_to_string(&p).unwrap();
        match tfn_frontend::parser::parse_file(tfn_ir::FileId(0), &t) {
            Ok(f) => println!("{p}: {} items", f.items.len()),
            Err(e) => println!("{p}: {:?}", e),
        }
    }
    let t = std::fs::read_to_string("/work/main/frontend/prelude/core.tfn").unwrap();
    match tfn_frontend::parser::parse_file(tfn_ir::FileId(0), &t) {
        Ok(f) => println!("core: {} items", f.items.len()),
        Err(e) => println!("core: {:?}", e),
    }
    let mut sm = tfn_ir::SourceMap::new();
    for src in ["fn f(Tensor x) -> Tensor {\n  return f(x, \n}\n", "fn f(Tensor x) -> Tensor {\n  let y = x +\n}\n", "op f(Tensor x)\n", "fn f(Tensor x) -> Tensor {\n  return -x**2 + 2 ** -1\n}\n"] {
        let id = sm.add("t.tfn", src);
        match tfn_frontend::parser::parse_file(id, src) {
            Ok(f) => println!("{:?}", f),
            Err(e) => for d in e { println!("{}", d.render(&sm)) },
        }
    }
}
