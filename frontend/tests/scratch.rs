use tfn_frontend::*;
#[test]
fn scratch() {
    let lib = match prelude() { Ok(l) => l, Err(e) => { let mut lib = tfn_ir::Library::default(); lib.sources.add("<prelude>", PRELUDE); println!("{}", tfn_ir::diagnostic::render_all(&e, &lib.sources)); panic!() } };
    for i in 0..5 {
        let p = format!("/tmp/fe/spec{i}.tfn");
        let t = std::fs::read_to_string(&p).unwrap();
        let mut l = if i == 0 || i == 4 { tfn_ir::Library::default() } else { lib.clone() };
        match load_source(&mut l, &p, &t, &FsLoader::new()) {
            Ok(w) => { println!("{p}: ok\n{}", tfn_ir::diagnostic::render_all(&w, &l.sources)); let ids = file_ids(&l, &p); println!("{}", print_library(&l, Some(&ids))); }
            Err(e) => println!("{p}:\n{}", tfn_ir::diagnostic::render_all(&e, &l.sources)),
        }
    }
    let mut l = lib.clone();
    match load_source(&mut l, "n.tfn", "use \"std:nn\"\n", &FsLoader::new()) {
            Ok(w) => println!("nn: ok\n{}", tfn_ir::diagnostic::render_all(&w, &l.sources)),
            Err(e) => println!("nn:\n{}", tfn_ir::diagnostic::render_all(&e, &l.sources)),
    }
}
