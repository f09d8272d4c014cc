// node --experimental-vm-modules tests/parse_js.cjs app/js: parse every browser file as what it is (an ES module,
// a callback body, a page script); prints each error, exits 1 if any (tests/test_project.py)
const fs = require("fs"), path = require("path"), vm = require("vm");
const root = process.argv[2];
let bad = 0, count = 0;
for (const kind of ["components", "classroom", "callbacks", "page"]) {
  for (const name of fs.readdirSync(path.join(root, kind)).filter((n) => n.endsWith(".js"))) {
    const file = path.join(root, kind, name), code = fs.readFileSync(file, "utf8");
    try {
      if (kind === "components" || kind === "classroom") new vm.SourceTextModule(code, { identifier: file });
      else if (kind === "callbacks") new Function("cb_obj", code);
      else new vm.Script(code, { filename: file });
      count++;
    } catch (error) { bad++; console.log(`${file}: ${error.message}`); }
  }
}
console.log(`${count} parsed, ${bad} failed`);
process.exit(bad ? 1 : 0);
