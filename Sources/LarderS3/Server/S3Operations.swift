import LarderStorage

/// The operations over one namespace's store, made per request for the
/// store of the namespace the request's key works in (a few references:
/// namespaces come and go, so nothing is kept per namespace here).
struct S3Operations {
    let buckets: BucketOperations
    let objects: ObjectOperations
    let listing: ListObjectsOperation
    let deleteObjects: DeleteObjectsOperation
    let copyObject: CopyObjectOperation
    let multipart: MultipartOperations
    let completion: MultipartCompletion
    let fixed: FixedSubresources
    let objectAttributes: GetObjectAttributesOperation
    let tagging: ObjectTaggingOperation
    let settings: BucketSettingsOperations

    init(store: any ValueStore, maxObjectBytes: Int64) {
        buckets = BucketOperations(store: store)
        objects = ObjectOperations(store: store, buckets: buckets, maxObjectBytes: maxObjectBytes)
        listing = ListObjectsOperation(store: store, buckets: buckets)
        deleteObjects = DeleteObjectsOperation(store: store, buckets: buckets)
        copyObject = CopyObjectOperation(store: store, buckets: buckets)
        multipart = MultipartOperations(store: store, buckets: buckets, objects: objects)
        completion = MultipartCompletion(store: store, maxObjectBytes: maxObjectBytes)
        fixed = FixedSubresources(store: store, buckets: buckets)
        objectAttributes = GetObjectAttributesOperation(store: store, buckets: buckets)
        tagging = ObjectTaggingOperation(store: store, buckets: buckets, copyObject: copyObject)
        settings = BucketSettingsOperations(store: store, buckets: buckets)
    }
}
