/* onion_addrs.h — valid v3 onion addresses (checksum and version right) for tests that need several
 * distinct ones, e.g. Onionbalance's limit of 8 instances. */
#ifndef TESTS_ONION_ADDRS_H
#define TESTS_ONION_ADDRS_H

/* Eight addresses as a JSON array's body, single-quoted (the tests turn ' into "). */
#define TEST_EIGHT_ADDRESSES                                                                                  \
    "'2gs2zgqbl6wc555tifttmnkrfikrd5a74n6rcgzgp4bz53c5j5mbz4ad','nk47d24ppuzyr5hz2wdpm3uz7vkaqdpsyrdpbzmgncyjycfbnxidqgyd'," \
    "'afpx426fv2xuqnzebcpjeuwmco2qsungw2kbeurhmxh7jv4agbxcytqd','f5iffsp5cwyzuggfqtibgy2wqgmgcpymgtueicpppe4hbgqvt3bihcqd'," \
    "'sqer3vskeh76sqquxrwrpxxliodtuxhs6ctrws24vknfzanwsz62bnyd','rdn7meuxfrmuulbpnxpespxrytgspln2rq3on26qboe76fb2xjqqfsyd'," \
    "'dwjk2s3jq75agr6mlux3nt46i7ed6t3mv2z3l33pmkltauujehby6eqd','7ocizgnzuq7mpbtkepvaadazhgqwr5p7c4yuuc4iy67hchl667ia3qad'"

#endif
