//! A pod's volumes and their sources, field by field as Go writes them (see the parent
//! module).

use k8s_pb::api::core::v1 as core;

use super::message;

message! { core::Volume {
    name: Req "name",
    volume_source: Inline "",
} }
message! { core::VolumeSource {
    host_path: Opt "hostPath",
    empty_dir: Opt "emptyDir",
    gce_persistent_disk: Opt "gcePersistentDisk",
    aws_elastic_block_store: Opt "awsElasticBlockStore",
    git_repo: Opt "gitRepo",
    secret: Opt "secret",
    nfs: Opt "nfs",
    iscsi: Opt "iscsi",
    glusterfs: Opt "glusterfs",
    persistent_volume_claim: Opt "persistentVolumeClaim",
    rbd: Opt "rbd",
    flex_volume: Opt "flexVolume",
    cinder: Opt "cinder",
    cephfs: Opt "cephfs",
    flocker: Opt "flocker",
    downward_api: Opt "downwardAPI",
    fc: Opt "fc",
    azure_file: Opt "azureFile",
    config_map: Opt "configMap",
    vsphere_volume: Opt "vsphereVolume",
    quobyte: Opt "quobyte",
    azure_disk: Opt "azureDisk",
    photon_persistent_disk: Opt "photonPersistentDisk",
    projected: Opt "projected",
    portworx_volume: Opt "portworxVolume",
    scale_io: Opt "scaleIO",
    storageos: Opt "storageos",
    csi: Opt "csi",
    ephemeral: Opt "ephemeral",
    image: Opt "image",
} }
message! { core::ImageVolumeSource {
    reference: Omit "reference",
    pull_policy: Omit "pullPolicy",
} }
message! { core::EphemeralVolumeSource {
    volume_claim_template: Opt "volumeClaimTemplate",
} }
message! { core::PersistentVolumeClaimTemplate {
    metadata: Req "metadata",
    spec: Req "spec",
} }
message! { core::PersistentVolumeClaimSpec {
    access_modes: Omit "accessModes",
    selector: Opt "selector",
    resources: Req "resources",
    volume_name: Omit "volumeName",
    storage_class_name: Opt "storageClassName",
    volume_mode: Opt "volumeMode",
    data_source: Opt "dataSource",
    data_source_ref: Opt "dataSourceRef",
    volume_attributes_class_name: Opt "volumeAttributesClassName",
} }
message! { core::TypedObjectReference {
    api_group: Opt "apiGroup",
    kind: Req "kind",
    name: Req "name",
    namespace: Opt "namespace",
} }
message! { core::TypedLocalObjectReference {
    api_group: Opt "apiGroup",
    kind: Req "kind",
    name: Req "name",
} }
message! { core::VolumeResourceRequirements {
    limits: Omit "limits",
    requests: Omit "requests",
} }
message! { core::CSIVolumeSource {
    driver: Req "driver",
    read_only: Opt "readOnly",
    fs_type: Opt "fsType",
    volume_attributes: Omit "volumeAttributes",
    node_publish_secret_ref: Opt "nodePublishSecretRef",
} }
message! { core::StorageOsVolumeSource {
    volume_name: Omit "volumeName",
    volume_namespace: Omit "volumeNamespace",
    fs_type: Omit "fsType",
    read_only: Omit "readOnly",
    secret_ref: Opt "secretRef",
} }
message! { core::ScaleIoVolumeSource {
    gateway: Req "gateway",
    system: Req "system",
    secret_ref: Opt "secretRef",
    ssl_enabled: Omit "sslEnabled",
    protection_domain: Omit "protectionDomain",
    storage_pool: Omit "storagePool",
    storage_mode: Omit "storageMode",
    volume_name: Omit "volumeName",
    fs_type: Omit "fsType",
    read_only: Omit "readOnly",
} }
message! { core::PortworxVolumeSource {
    volume_id: Req "volumeID",
    fs_type: Omit "fsType",
    read_only: Omit "readOnly",
} }
message! { core::ProjectedVolumeSource {
    sources: Req "sources",
    default_mode: Opt "defaultMode",
} }
message! { core::VolumeProjection {
    secret: Opt "secret",
    downward_api: Opt "downwardAPI",
    config_map: Opt "configMap",
    service_account_token: Opt "serviceAccountToken",
    cluster_trust_bundle: Opt "clusterTrustBundle",
    pod_certificate: Opt "podCertificate",
} }
message! { core::PodCertificateProjection {
    signer_name: Omit "signerName",
    key_type: Omit "keyType",
    max_expiration_seconds: Opt "maxExpirationSeconds",
    credential_bundle_path: Omit "credentialBundlePath",
    key_path: Omit "keyPath",
    certificate_chain_path: Omit "certificateChainPath",
    user_annotations: Omit "userAnnotations",
} }
message! { core::ClusterTrustBundleProjection {
    name: Opt "name",
    signer_name: Opt "signerName",
    label_selector: Opt "labelSelector",
    optional: Opt "optional",
    path: Req "path",
} }
message! { core::ServiceAccountTokenProjection {
    audience: Omit "audience",
    expiration_seconds: Opt "expirationSeconds",
    path: Req "path",
} }
message! { core::ConfigMapProjection {
    local_object_reference: Inline "",
    items: Omit "items",
    optional: Opt "optional",
} }
message! { core::KeyToPath {
    key: Req "key",
    path: Req "path",
    mode: Opt "mode",
} }
message! { core::DownwardAPIProjection {
    items: Omit "items",
} }
message! { core::DownwardAPIVolumeFile {
    path: Req "path",
    field_ref: Opt "fieldRef",
    resource_field_ref: Opt "resourceFieldRef",
    mode: Opt "mode",
} }
message! { core::SecretProjection {
    local_object_reference: Inline "",
    items: Omit "items",
    optional: Opt "optional",
} }
message! { core::PhotonPersistentDiskVolumeSource {
    pd_id: Req "pdID",
    fs_type: Omit "fsType",
} }
message! { core::AzureDiskVolumeSource {
    disk_name: Req "diskName",
    disk_uri: Req "diskURI",
    caching_mode: Opt "cachingMode",
    fs_type: Opt "fsType",
    read_only: Opt "readOnly",
    kind: Opt "kind",
} }
message! { core::QuobyteVolumeSource {
    registry: Req "registry",
    volume: Req "volume",
    read_only: Omit "readOnly",
    user: Omit "user",
    group: Omit "group",
    tenant: Omit "tenant",
} }
message! { core::VsphereVirtualDiskVolumeSource {
    volume_path: Req "volumePath",
    fs_type: Omit "fsType",
    storage_policy_name: Omit "storagePolicyName",
    storage_policy_id: Omit "storagePolicyID",
} }
message! { core::ConfigMapVolumeSource {
    local_object_reference: Inline "",
    items: Omit "items",
    default_mode: Opt "defaultMode",
    optional: Opt "optional",
} }
message! { core::AzureFileVolumeSource {
    secret_name: Req "secretName",
    share_name: Req "shareName",
    read_only: Omit "readOnly",
} }
message! { core::FcVolumeSource {
    target_ww_ns: Omit "targetWWNs",
    lun: Opt "lun",
    fs_type: Omit "fsType",
    read_only: Omit "readOnly",
    wwids: Omit "wwids",
} }
message! { core::DownwardAPIVolumeSource {
    items: Omit "items",
    default_mode: Opt "defaultMode",
} }
message! { core::FlockerVolumeSource {
    dataset_name: Omit "datasetName",
    dataset_uuid: Omit "datasetUUID",
} }
message! { core::CephFsVolumeSource {
    monitors: Req "monitors",
    path: Omit "path",
    user: Omit "user",
    secret_file: Omit "secretFile",
    secret_ref: Opt "secretRef",
    read_only: Omit "readOnly",
} }
message! { core::CinderVolumeSource {
    volume_id: Req "volumeID",
    fs_type: Omit "fsType",
    read_only: Omit "readOnly",
    secret_ref: Opt "secretRef",
} }
message! { core::FlexVolumeSource {
    driver: Req "driver",
    fs_type: Omit "fsType",
    secret_ref: Opt "secretRef",
    read_only: Omit "readOnly",
    options: Omit "options",
} }
message! { core::RbdVolumeSource {
    monitors: Req "monitors",
    image: Req "image",
    fs_type: Omit "fsType",
    pool: Omit "pool",
    user: Omit "user",
    keyring: Omit "keyring",
    secret_ref: Opt "secretRef",
    read_only: Omit "readOnly",
} }
message! { core::PersistentVolumeClaimVolumeSource {
    claim_name: Req "claimName",
    read_only: Omit "readOnly",
} }
message! { core::GlusterfsVolumeSource {
    endpoints: Req "endpoints",
    path: Req "path",
    read_only: Omit "readOnly",
} }
message! { core::IscsiVolumeSource {
    target_portal: Req "targetPortal",
    iqn: Req "iqn",
    lun: Req "lun",
    iscsi_interface: Omit "iscsiInterface",
    fs_type: Omit "fsType",
    read_only: Omit "readOnly",
    portals: Omit "portals",
    chap_auth_discovery: Omit "chapAuthDiscovery",
    chap_auth_session: Omit "chapAuthSession",
    secret_ref: Opt "secretRef",
    initiator_name: Opt "initiatorName",
} }
message! { core::NfsVolumeSource {
    server: Req "server",
    path: Req "path",
    read_only: Omit "readOnly",
} }
message! { core::SecretVolumeSource {
    secret_name: Omit "secretName",
    items: Omit "items",
    default_mode: Opt "defaultMode",
    optional: Opt "optional",
} }
message! { core::GitRepoVolumeSource {
    repository: Req "repository",
    revision: Omit "revision",
    directory: Omit "directory",
} }
message! { core::AwsElasticBlockStoreVolumeSource {
    volume_id: Req "volumeID",
    fs_type: Omit "fsType",
    partition: Omit "partition",
    read_only: Omit "readOnly",
} }
message! { core::GcePersistentDiskVolumeSource {
    pd_name: Req "pdName",
    fs_type: Omit "fsType",
    partition: Omit "partition",
    read_only: Omit "readOnly",
} }
message! { core::EmptyDirVolumeSource {
    medium: Omit "medium",
    size_limit: Opt "sizeLimit",
} }
message! { core::HostPathVolumeSource {
    path: Req "path",
    r#type: Opt "type",
} }
