// The model families shardlab builds, one line each: the only place a family is registered.
// SHARDLAB_FAMILY(name) names a folder model/<name>/ that defines two constants:
//   const Family <name>_family            its facts (model/family.h): layout, config, costs
//   const FamilyModel <name>_family_model its model and initialisation (model/families.h)
// Each includer defines SHARDLAB_FAMILY to what it needs (an enum value, a table entry) before
// including this file; the order is Architecture's.
SHARDLAB_FAMILY(gpt2)
SHARDLAB_FAMILY(llama)
