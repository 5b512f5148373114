//! Remote stores off the common path, against real servers on 127.0.0.1: S3 endpoints named by
//! the environment beside `--endpoint`, servers that ignore or half-honour byte ranges, bodies
//! that arrive slowly, listings of many pages.

use crate::common;

use common::mount::{read_direct, Mount};
use common::servers;
use common::{all_fixture_cases, expected_bytes, StoreCase};
use std::path::Path;

/// A fixture store's cases by name.
fn case(name: &str) -> StoreCase {
    all_fixture_cases()
        .into_iter()
        .find(|c| c.name == name)
        .unwrap()
}

/// The expected `A` bytes of array `path` of `case`.
fn expected_data(case: &StoreCase, path: &str) -> Vec<u8> {
    expected_bytes(case.nodes.iter().find(|n| n.path == path).unwrap()).1
}

/// `--endpoint` (or an endpoint in the URL) wins over AWS_ENDPOINT_URL_S3, which the S3 client
/// otherwise prefers; an http:// endpoint from that variable alone is allowed plain http.
#[test]
fn an_explicit_endpoint_wins_over_the_environments() {
    let c = case("consolidated_v2_zarr2");
    let server = servers::s3_server(&[("endpoints", std::slice::from_ref(&c.store))]);
    servers::s3_credentials_env();
    let nobody = format!("http://127.0.0.1:{}", servers::free_port());
    let url = format!("s3://endpoints/{}", c.dir_name());
    let netcdf_url = format!("{}/endpoints/{}#mode=nczarr,s3", server.url, c.dir_name());
    let unset = ["AWS_ENDPOINT", "AWS_ENDPOINT_URL", "AWS_ALLOW_HTTP"].map(|v| (v, None));
    let y = expected_data(&c, "y");
    for (store, args, endpoint_s3) in [
        (&url, vec!["--endpoint", &server.url], nobody.as_str()),
        (&netcdf_url, vec![], nobody.as_str()),
        (&url, vec![], server.url.as_str()),
    ] {
        let mut env = unset.to_vec();
        env.push(("AWS_ENDPOINT_URL_S3", Some(endpoint_s3)));
        let mount = Mount::try_with_env(Path::new(store), &args, &env)
            .unwrap_or_else(|e| panic!("{store} {args:?}, AWS_ENDPOINT_URL_S3={endpoint_s3}: {e}"));
        assert_eq!(read_direct(mount.join("y")).unwrap(), y, "{store} {args:?}");
    }
}
