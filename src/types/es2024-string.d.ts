// String.prototype.isWellFormed ships with Node 20 (V8 11.3) but its type is in lib
// ES2024, past the ES2023 this project targets.
interface String {
  isWellFormed(): boolean;
}
